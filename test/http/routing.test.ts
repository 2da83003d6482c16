import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router } from '@koa/router';
import { expect } from 'chai';
import fc from 'fast-check';
import Koa, { type Middleware } from 'koa';
import compose from 'koa-compose';
import pino from 'pino';
import { createApp } from '../../src/http/app.js';
import {
  firstSegment,
  isOwnPath,
  routeByShape,
  routersOf,
  shapeIndex,
  shapeOf,
  templateOf,
} from '../../src/http/routing.js';
import { RESERVED_PROJECT_NAMES } from '../../src/services/accounts.js';
import { forEachStore } from '../support/stores.js';

describe('routing by first segment', () => {
  it('takes the first segment of a path', () => {
    expect(firstSegment('/acme/items/1')).to.equal('acme');
    expect(firstSegment('/acme')).to.equal('acme');
    expect(firstSegment('/acme/')).to.equal('acme');
    expect(firstSegment('/')).to.equal('');
    expect(firstSegment('//x')).to.equal('');
  });

  it('sends every reserved name, in any case, to Folio’s own routes and anything else to the projects', () => {
    for (const name of RESERVED_PROJECT_NAMES) {
      expect(isOwnPath(`/${name}`), name).to.equal(true);
      expect(isOwnPath(`/${name.toUpperCase()}/x`), name).to.equal(true);
      expect(isOwnPath(`/${name}x/y`), `${name}x`).to.equal(false);
    }
    expect(isOwnPath('/acme/items')).to.equal(false);
    expect(isOwnPath('/')).to.equal(false);
    // Percent-encoded, a reserved name is a project path; the data routes then refuse it (below).
    expect(isOwnPath('/%61pi/keys')).to.equal(false);
  });
});

forEachStore('routing by first segment over HTTP', (ctx) => {
  it('answers Folio’s own routes in any case, and a reserved name spelt another way is never a project', async () => {
    expect((await ctx.server.request('GET', '/HEALTHZ')).status).to.equal(200);
    const projects = await ctx.server.request('GET', '/API/projects', { session: ctx.tenant.session });
    expect(projects.status).to.equal(200);
    const encoded = await ctx.server.request('GET', '/%61pi/items/x', { key: ctx.tenant.key });
    expect(encoded.status).to.equal(404);
    expect(encoded.body.error.code).to.equal('not_found');
  });

  it('a project path that matches no data route is a JSON 404, a wrong method a JSON 405', async () => {
    const missing = await ctx.server.request('GET', `/${ctx.tenant.project}/items/x/y/z/w`, {
      key: ctx.tenant.key,
    });
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    const wrong = await ctx.server.request('POST', `/${ctx.tenant.project}/items/x`, {
      key: ctx.tenant.key,
      body: {},
    });
    expect(wrong.status).to.equal(405);
    expect(wrong.body.error.code).to.equal('method_not_allowed');
    const ownWrong = await ctx.server.request('DELETE', '/healthz');
    expect(ownWrong.status).to.equal(405);
  });
});

describe('routing by path shape', () => {
  const literals = [
    new Set<string>(),
    new Set<string>(),
    new Set(['_webhooks', '_trash']),
    new Set(['restore']),
  ];

  it('reads a route path as literal segments and params, and refuses anything else', () => {
    expect(templateOf('/:ns/:collection/_Webhooks/:id')).to.deep.equal([null, null, '_webhooks', null]);
    expect(templateOf('/:ns/{id}')).to.equal(null);
    expect(templateOf('(.*)')).to.equal(null);
  });

  it('takes a path’s shape: known literals in lower case, anything else blank, one trailing slash dropped', () => {
    expect(shapeOf('/acme/items/x', literals, 4)).to.equal('///');
    expect(shapeOf('/acme/items/_WEBHOOKS/', literals, 4)).to.equal('///_webhooks');
    expect(shapeOf('/acme/items/_webhooks/1/', literals, 4)).to.equal('///_webhooks/');
    // A literal counts only where some route has it.
    expect(shapeOf('/_trash/items/restore', literals, 4)).to.equal('///');
    expect(shapeOf('/acme/items/_trash/restore', literals, 4)).to.equal('///_trash/restore');
    // As many segments as the longest route, and no more.
    expect(shapeOf('/a/b/c/d', literals, 4)).to.equal('////');
    expect(shapeOf('/a/b/c/d/e', literals, 4)).to.equal(null);
    expect(shapeOf('/a/b/c/d/', literals, 4)).to.equal('////');
    // An empty segment matches no `:param`.
    expect(shapeOf('/a//c', literals, 4)).to.equal(null);
    expect(shapeOf('/a/b//', literals, 4)).to.equal(null);
    expect(shapeOf('/', literals, 4)).to.equal(null);
    // A segment longer than every literal at its position is not looked up; as long, it is.
    const longest = [0, 0, '_webhooks'.length, 'restore'.length];
    expect(shapeOf('/acme/items/_WEBHOOKS', literals, 4, longest)).to.equal('///_webhooks');
    expect(shapeOf('/acme/items/_trash/restore', literals, 4, longest)).to.equal('///_trash/restore');
    expect(shapeOf('/acme/items/_trash/restore', literals, 4, [0, 0, 9, 6])).to.equal('///_trash/');
  });

  it('offers every data route whose pattern matches a path, in the router’s order, for any path', async () => {
    const dataRouter = await dataRoutes();
    const layers = dataRouter.stack;
    const candidates = shapeIndex(layers);
    const templates = layers.map((layer) => String(layer.path).slice(1).split('/'));
    const longest = Math.max(...templates.map((t) => t.length));
    const anySegment = fc.oneof(
      fc.constantFrom('x', 'items', 'versions', 'diff', '%5Fwebhooks', 'restore', '_'),
      fc.stringMatching(/^[A-Za-z0-9_.~%-]{1,12}$/),
    );
    // A route's path with its params filled in, literals in random case, or random segments.
    const path = fc.oneof(
      fc
        .tuple(
          fc.constantFrom(...templates),
          fc.array(anySegment, { minLength: longest + 1, maxLength: longest + 1 }),
        )
        .chain(([template, fill]) =>
          fc
            .array(fc.boolean(), { minLength: template.length, maxLength: template.length })
            .map((upper) =>
              template.map((segment, i) =>
                segment.startsWith(':') ? fill[i] : upper[i] ? segment.toUpperCase() : segment,
              ),
            ),
        ),
      fc.array(fc.oneof(anySegment, fc.constant('')), { minLength: 0, maxLength: longest + 2 }),
    );
    fc.assert(
      fc.property(path, fc.boolean(), fc.integer({ min: 0, max: longest + 1 }), (segments, slash, cut) => {
        const full = `/${segments.slice(0, Math.max(cut, 1)).join('/')}${slash ? '/' : ''}`;
        const matching = layers.filter((layer) => layer.match(full));
        const offered = candidates(full).layers;
        expect(
          offered.filter((layer) => layer.match(full)),
          full,
        ).to.deep.equal(matching);
        // In the router's order: the offered routes are a subsequence of its stack.
        let at = -1;
        for (const layer of offered) {
          const next = layers.indexOf(layer, at + 1);
          expect(next, full).to.be.greaterThan(at);
          at = next;
        }
      }),
      { numRuns: 2000 },
    );
    // The longest routes are offered, and nothing for a path longer than any route.
    const longestPath = `/${templates
      .find((t) => t.length === longest)
      ?.map((s) => (s.startsWith(':') ? 'x' : s))
      .join('/')}`;
    expect(candidates(longestPath).layers.some((layer) => layer.match(longestPath))).to.equal(true);
    expect(candidates(`${longestPath}/x`).layers).to.deep.equal([]);
  });
});

describe('routing by path shape, answered', () => {
  // The data routes' paths and methods, each answering what the router told it; the same routes
  // run by the router itself and by routeByShape must answer every request the same way.
  let routes: { path: string; methods: string[] }[];
  const servers: Server[] = [];
  const urls: string[] = [];

  before(async () => {
    routes = (await dataRoutes()).stack.map((layer) => ({
      path: String(layer.path),
      methods: layer.methods,
    }));
    for (const shaped of [false, true]) {
      for (const throwing of [false, true]) {
        const router = recordingRouter(routes);
        const allowed = { throw: throwing };
        const app = new Koa();
        app.use(async (ctx, next) => {
          try {
            await next();
          } catch (caught) {
            const error = caught as { status?: number; message: string };
            ctx.status = error.status ?? 500;
            ctx.body = { error: error.message };
          }
        });
        app.use(
          shaped
            ? (routeByShape(router as never, allowed) as Middleware)
            : (compose([router.routes(), router.allowedMethods(allowed)]) as Middleware),
        );
        const server = createServer(app.callback()).listen(0, '127.0.0.1');
        await once(server, 'listening');
        servers.push(server);
        urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      }
    }
  });

  after(() => {
    for (const server of servers) server.close();
  });

  it('answers as the whole router: status, Allow, the route, its params and the routes matched', async () => {
    const templates = routes.map((route) => route.path.slice(1).split('/'));
    const segment = fc.oneof(
      fc.constantFrom('x', 'diff', '_webhooks', 'versions', 'restore', '%7E', '%E2%82%AC', '%zz'),
      fc.stringMatching(/^[A-Za-z0-9_.~-]{1,8}$/),
    );
    const path = fc.oneof(
      fc
        .tuple(fc.constantFrom(...templates), fc.array(segment, { minLength: 8, maxLength: 8 }), fc.boolean())
        .map(([template, fill, upper]) =>
          template.map((s, i) => (s.startsWith(':') ? fill[i] : upper ? s.toUpperCase() : s)),
        ),
      fc.array(segment, { minLength: 1, maxLength: 8 }),
    );
    const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND');
    await fc.assert(
      fc.asyncProperty(path, method, fc.boolean(), fc.boolean(), async (segments, verb, slash, fall) => {
        const target = `/${segments.join('/')}${slash ? '/' : ''}${fall ? '?fall=1' : ''}`;
        for (const pair of [0, 1]) {
          const [plain, shaped] = await Promise.all(
            [urls[pair], urls[pair + 2]].map(async (url) => {
              const res = await fetch(`${url}${target}`, { method: verb });
              return { status: res.status, allow: res.headers.get('allow'), text: await res.text() };
            }),
          );
          expect(shaped, `${verb} ${target}`).to.deep.equal(plain);
        }
      }),
      { numRuns: 300 },
    );
  });
});

/** Routes at these paths that answer with what the router set; `?fall=1` passes to the next. */
function recordingRouter(routes: { path: string; methods: string[] }[]): Router {
  const router = new Router();
  router.param('ns', (ns, ctx, next) => {
    ctx.state.seen = [...(ctx.state.seen ?? []), `ns:${ns}`];
    return next();
  });
  routes.forEach(({ path, methods }, i) => {
    router.register(
      path,
      methods,
      async (ctx, next) => {
        if (ctx.query.fall) {
          ctx.state.seen = [...(ctx.state.seen ?? []), `fell:${i}`];
          return next();
        }
        ctx.body = {
          route: i,
          params: ctx.params,
          captures: ctx.captures,
          routerPath: ctx.routerPath,
          matchedRoute: ctx._matchedRoute,
          matched: ctx.matched?.map((layer) => String(layer.path)),
          seen: ctx.state.seen,
        };
      },
      { name: `route${i}` },
    );
  });
  return router;
}

/** The data routes' router, as the application builds it (the one with `/:ns/...` routes). */
async function dataRoutes(): Promise<Router> {
  const { startTestServer } = await import('../support/server.js');
  const server = await startTestServer();
  try {
    const app = createApp(server.running.services, pino({ level: 'silent' }));
    const router = routersOf(app.middleware).find((r) =>
      r.stack.some((l) => String(l.path).startsWith('/:ns/')),
    );
    if (!router) throw new Error('no data router');
    return router as unknown as Router;
  } finally {
    await server.close();
  }
}
