import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

forEachStore('CORS for browser clients', (ctx) => {
  const page = 'https://app.example';
  const path = (s: string) => `/${ctx.tenant.project}${s}`;
  let projectId = '';
  let readOnly = '';

  before(async () => {
    const projects = await ctx.server.request('GET', '/api/projects', { session: ctx.tenant.session });
    projectId = projects.body.projects[0].id;
    readOnly = (await ctx.tenant.newKey({ scope: 'read-only', name: 'front end' })).rawKey;
    await ctx.server.request('PUT', path('/notes/n1'), { key: ctx.tenant.key, body: { a: 1 } });
  });

  const setOrigins = (allowedOrigins: unknown) =>
    ctx.server.request('PATCH', `/api/projects/${projectId}`, {
      session: ctx.tenant.session,
      body: { allowedOrigins },
    });

  it('answers a preflight without a key, allowing Authorization, If-Match, the patch types and the write methods', async () => {
    const res = await ctx.server.request('OPTIONS', path('/notes/x'), {
      headers: {
        Origin: page,
        'Access-Control-Request-Method': 'PATCH',
        'Access-Control-Request-Headers': 'authorization, content-type, if-match',
      },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('access-control-allow-methods')).to.include('PATCH');
    const allowed = (res.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const name of ['authorization', 'content-type', 'if-match', 'last-event-id'])
      expect(allowed).to.include(name);
  });

  it('by default a read-only key works from any page, answered for that origin, with readable headers', async () => {
    const res = await ctx.server.request('GET', path('/notes/n1'), {
      key: readOnly,
      headers: { Origin: page },
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('access-control-allow-origin')).to.equal(page);
    expect(res.headers.get('vary')).to.include('Origin');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    for (const name of ['etag', 'x-ratelimit-remaining', 'x-request-id', 'x-document-version', 'location']) {
      expect(exposed).to.include(name);
    }
  });

  it('by default a read-write key from a page is 403 origin_not_allowed saying why and how, and writes nothing', async () => {
    // A collection of its own: other cases write to theirs, so "nothing" is this refusal's alone.
    const res = await ctx.server.request('POST', path('/refused'), {
      key: ctx.tenant.key,
      body: { a: 1 },
      headers: { Origin: page },
    });
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('origin_not_allowed');
    expect(res.body.error.message)
      .to.include('read-only key')
      .and.include('allowedOrigins')
      .and.include(page);
    expect(res.headers.get('access-control-allow-origin'), 'the page can read the reason').to.equal(page);
    // A refusal with a valid key is counted like any keyed request, and says so.
    expect(
      res.headers.get('x-ratelimit-limit'),
      'a refused keyed request carries the rate-limit headers',
    ).to.be.a('string');
    const get = await ctx.server.request('GET', path('/notes/n1'), {
      key: ctx.tenant.key,
      headers: { Origin: page },
    });
    expect(get.status, 'reads with a secret key from a page are refused too').to.equal(403);
    const list = await ctx.server.request('GET', path('/refused'), { key: ctx.tenant.key });
    expect(list.body.meta.total).to.equal(0);
  });

  it('a read-write key without Origin (a server) or from Folio’s own origin is not a browser page of another site', async () => {
    const server = await ctx.server.request('POST', path('/browser'), {
      key: ctx.tenant.key,
      body: { a: 1 },
    });
    expect(server.status).to.equal(201);
    // No Origin, no CORS headers (they would mean nothing to it), but caches still tell apart
    // the answer a page gets.
    expect(server.headers.get('access-control-allow-origin')).to.equal(null);
    expect(server.headers.get('access-control-expose-headers')).to.equal(null);
    expect(server.headers.get('vary')).to.include('Origin');
    const own = await ctx.server.request('POST', path('/browser'), {
      key: ctx.tenant.key,
      body: { a: 2 },
      headers: { Origin: new URL(ctx.server.url).origin },
    });
    expect(own.status).to.equal(201);
  });

  it('a project’s allowed origins admit any of its keys from those pages, and only those', async () => {
    const set = await setOrigins([page, 'http://localhost:5173']);
    expect(set.status, set.text).to.equal(200);
    expect(set.body.allowedOrigins).to.deep.equal([page, 'http://localhost:5173']);
    try {
      const write = await ctx.server.request('PATCH', path('/notes/n1'), {
        key: ctx.tenant.key,
        body: { b: 2 },
        contentType: 'application/merge-patch+json',
        headers: { Origin: page },
      });
      expect(write.status).to.equal(200);
      for (const key of [ctx.tenant.key, readOnly]) {
        const other = await ctx.server.request('GET', path('/notes/n1'), {
          key,
          headers: { Origin: 'https://evil.example' },
        });
        expect(other.status).to.equal(403);
        expect(other.body.error.code).to.equal('origin_not_allowed');
      }
      expect((await setOrigins(['*'])).status).to.equal(200);
      const any = await ctx.server.request('GET', path('/notes/n1'), {
        key: ctx.tenant.key,
        headers: { Origin: 'https://evil.example' },
      });
      expect(any.status, '* allows every origin').to.equal(200);
    } finally {
      expect((await setOrigins(null)).body.allowedOrigins).to.equal(null);
    }
    const back = await ctx.server.request('GET', path('/notes/n1'), {
      key: ctx.tenant.key,
      headers: { Origin: page },
    });
    expect(back.status, 'null restores the default policy').to.equal(403);
  });

  it('allowed origins are validated; other accounts cannot change them', async () => {
    for (const bad of [
      ['https://app.example/path'],
      ['ftp://x.example'],
      ['not a url'],
      'x',
      [1],
      ['https://a.example/'],
    ]) {
      const res = await setOrigins(bad);
      expect(res.status, JSON.stringify(bad)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
    const tooMany = await setOrigins(Array.from({ length: 51 }, (_, i) => `https://a${i}.example`));
    expect(tooMany.status).to.equal(400);
    const fifty = await setOrigins(Array.from({ length: 50 }, (_, i) => `https://a${i}.example`));
    expect(fifty.status).to.equal(200);
    await setOrigins(null);
    const stranger = await ctx.server.tenant();
    const res = await ctx.server.request('PATCH', `/api/projects/${projectId}`, {
      session: stranger.session,
      body: { allowedOrigins: ['*'] },
    });
    expect(res.status).to.equal(403);
  });
});

describe('CORS origin configuration', () => {
  it('cors.origin narrows the origin preflights and system routes answer for', async () => {
    const server = await startTestServer({ config: { cors: { origin: 'https://only.example' } } });
    try {
      const res = await server.request('GET', '/healthz', { headers: { Origin: 'https://app.example' } });
      expect(res.headers.get('access-control-allow-origin')).to.equal('https://only.example');
    } finally {
      await server.close();
    }
  });
});
