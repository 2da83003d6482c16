/**
 * The isolation matrix: every data route (read from the app's own router, so a new route joins
 * the matrix by itself) × every credential that must not reach the victim's data answers as
 * docs/api.md says, and no answer carries the victim's data. Credentials: none, a revoked key,
 * a rotated-out key, the victim's read-only key, another project's key, the same project's
 * key of the other environment, the victim's session token instead of a key, and the key of
 * another account's project that has the same name (it reaches that project, never the victim's).
 */
import { expect } from 'chai';
import { createRouters } from '../../src/http/app.js';
import { forEachStore } from '../support/stores.js';

/** A value no response to another credential may contain. */
const MARKER = `victim-secret-${Date.now()}`;

interface Answer {
  status: number;
  code: string | undefined;
  text: string;
}

forEachStore(
  'reliability: isolation matrix',
  (ctx) => {
    it('every data route × every foreign or insufficient credential answers as documented and leaks nothing', async () => {
      const { server, tenant: victim } = ctx;
      const project = victim.project;
      const created = await server.request('POST', `/${project}/vault`, {
        key: victim.key,
        body: { secret: MARKER },
      });
      expect(created.status).to.equal(201);
      await server.request('PATCH', `/${project}/vault/${created.body._id}`, {
        key: victim.key,
        body: { again: MARKER },
        contentType: 'application/merge-patch+json',
      });
      const hook = await server.request('POST', `/${project}/vault/_webhooks`, {
        key: victim.key,
        body: { url: `http://127.0.0.1:9/${MARKER}`, events: ['document.created'] },
      });
      expect(hook.status).to.equal(201);

      const revoked = await victim.newKey({ name: 'to revoke' });
      expect(
        (await server.request('DELETE', `/api/keys/${revoked.id}`, { session: victim.session })).status,
      ).to.equal(204);
      const rotated = await victim.newKey({ name: 'to rotate' });
      const rotation = await server.request('POST', `/api/keys/${rotated.id}/rotate`, {
        session: victim.session,
      });
      expect(rotation.status).to.equal(201);
      const readOnly = await victim.newKey({ scope: 'read-only', name: 'read only' });
      const live = await victim.newKey({ env: 'live', name: 'live' });
      const other = await server.tenant({ plan: 'pro', project: 'intruder' });
      // Project names are per account: another account's project of the same name is its own.
      const namesake = await server.tenant({ plan: 'pro', project });

      const params = new Map<string, string>([
        ['ns', project],
        ['collection', 'vault'],
        ['version', '1'],
      ]);
      const routes = dataRoutes(ctx.server.running.services);
      expect(routes.length).to.be.at.least(15);

      const credentials: Array<{
        name: string;
        token?: string;
        expect: (method: string, path: string) => number | 'allowed';
      }> = [
        { name: 'no key', expect: () => 401 },
        { name: 'revoked key', token: revoked.rawKey, expect: () => 401 },
        { name: 'rotated-out key', token: rotated.rawKey, expect: () => 401 },
        { name: 'session instead of key', token: victim.session, expect: () => 401 },
        { name: "other project's key", token: other.key, expect: () => 403 },
        {
          name: 'read-only key',
          token: readOnly.rawKey,
          // A stream ticket lets its holder read a stream: any key may mint one.
          expect: (m, p) => (m === 'GET' || p.endsWith('/_stream/tickets') ? 'allowed' : 403),
        },
        { name: "other environment's key", token: live.rawKey, expect: () => 'allowed' },
        {
          name: "a same-named project's key of another account",
          token: namesake.key,
          expect: () => 'allowed',
        },
      ];
      const expectedCodes = new Map([
        [401, 'unauthorized'],
        [403, undefined],
      ]);
      let checked = 0;
      for (const route of routes) {
        const id = route.path.includes('_webhooks') ? hook.body.id : created.body._id;
        const path = route.path.replace(/:(\w+)/g, (_, name: string) =>
          name === 'id' ? id : (params.get(name) ?? name),
        );
        for (const credential of credentials) {
          const answer = await call(server.url, route.method, path, credential.token);
          const label = `${credential.name}: ${route.method} ${route.path} → ${answer.status} ${answer.text.slice(0, 200)}`;
          const wanted = credential.expect(route.method, route.path);
          if (wanted === 'allowed') {
            expect(answer.status, label).to.be.below(500);
            expect(
              [401, 403].includes(answer.status) && answer.code !== 'plan_limit_exceeded',
              label,
            ).to.equal(false);
          } else {
            expect(answer.status, label).to.equal(wanted);
            if (expectedCodes.get(wanted)) expect(answer.code, label).to.equal(expectedCodes.get(wanted));
            if (credential.name === "other project's key") expect(answer.code, label).to.equal('forbidden');
            if (credential.name === 'read-only key') expect(answer.code, label).to.equal('read_only_key');
          }
          // The victim's own read-only key may read the victim's data; nobody else sees any of it.
          if (credential.name !== 'read-only key') expect(answer.text, label).not.to.include(MARKER);
          checked += 1;
        }
      }
      expect(checked).to.equal(routes.length * credentials.length);

      // And the victim's data is as it was: the other environment's writes went to its own data.
      const after = await server.request('GET', `/${project}/vault/${created.body._id}`, { key: victim.key });
      expect(after.status).to.equal(200);
      expect(after.body).to.include({ secret: MARKER, again: MARKER, $version: 2 });
    });
  },
  { plan: 'pro', config: { webhooks: { allowPrivateTargets: true } } },
);

/** `METHOD /:ns/...` of every route the data router serves (HEAD and OPTIONS left out). */
function dataRoutes(services: Parameters<typeof createRouters>[0]): Array<{ method: string; path: string }> {
  const routes: Array<{ method: string; path: string }> = [];
  for (const layer of createRouters(services).data.stack) {
    const path = String(layer.path);
    if (!path.startsWith('/:ns')) continue;
    for (const method of layer.methods) {
      if (method !== 'HEAD' && method !== 'OPTIONS') routes.push({ method, path });
    }
  }
  return routes;
}

/** One request with a JSON body for writes; a stream's answer is read up to its first bytes. */
async function call(base: string, method: string, path: string, token?: string): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (method !== 'GET' && method !== 'DELETE') {
    headers['Content-Type'] = 'application/json';
    body = path.endsWith('_bulk') ? JSON.stringify({ operations: [] }) : '{"x":1}';
  }
  const abort = new AbortController();
  const res = await fetch(`${base}${path}`, { method, headers, body, signal: abort.signal });
  let text: string;
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    const reader = res.body?.getReader();
    const first = await reader?.read();
    text = first?.value ? Buffer.from(first.value).toString() : '';
    abort.abort();
  } else {
    text = await res.text();
  }
  let code: string | undefined;
  try {
    code = JSON.parse(text)?.error?.code;
  } catch {
    code = undefined;
  }
  return { status: res.status, code, text };
}
