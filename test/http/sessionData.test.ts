/**
 * `/api/data/{env}/{ns}/...`: the data API for the dashboard, authenticated by the owner's
 * session. Same answers as the keyed routes, same scopes, the CSRF rule for cookies, and the
 * plan's rate limit per account.
 */
import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { forEachStore } from '../support/stores.js';

forEachStore(
  'session-authenticated data routes',
  (ctx) => {
    const data = (env: string, rest = '') => `/api/data/${env}/${ctx.tenant.project}${rest}`;

    it('reads what an API key wrote, in the key’s environment only', async () => {
      const { key, session } = ctx.tenant;
      const created = await ctx.server.request('POST', `/${ctx.tenant.project}/notes`, {
        key,
        body: { title: 'from a key' },
      });
      const id = created.body._id;
      const read = await ctx.server.request('GET', data('test', `/notes/${id}`), { session });
      expect(read.status).to.equal(200);
      expect(read.body).to.deep.equal(created.body);
      expect(read.headers.get('etag')).to.equal('"1"');
      const live = await ctx.server.request('GET', data('live', `/notes/${id}`), { session });
      expect(live.status).to.equal(404);
    });

    it('answers lists, writes, history, diff and restore as the keyed routes do', async () => {
      const { session } = ctx.tenant;
      const created = await ctx.server.request('POST', data('test', '/things'), { session, body: { n: 1 } });
      expect(created.status).to.equal(201);
      const path = data('test', `/things/${created.body._id}`);
      const put = await ctx.server.request('PUT', path, {
        session,
        body: { n: 2 },
        headers: { 'If-Match': '"1"' },
      });
      expect(put.status).to.equal(200);
      const stale = await ctx.server.request('PUT', path, {
        session,
        body: { n: 3 },
        headers: { 'If-Match': '"1"' },
      });
      expect(stale.status).to.equal(412);
      expect(stale.body.error.code).to.equal('version_mismatch');
      const list = await ctx.server.request('GET', `${data('test', '/things')}?filter[n][gte]=2&sort=-n`, {
        session,
      });
      expect(list.body.meta.total).to.equal(1);
      expect(list.body.data[0].n).to.equal(2);
      const badFilter = await ctx.server.request('GET', `${data('test', '/things')}?filter[n][near]=2`, {
        session,
      });
      expect(badFilter.status).to.equal(400);
      expect(badFilter.body.error.code).to.equal('invalid_query');
      const versions = await ctx.server.request('GET', `${path}/versions`, { session });
      expect(versions.body.versions.map((v: { version: number }) => v.version)).to.deep.equal([2, 1]);
      const diff = await ctx.server.request('GET', `${path}/versions/diff?from=1&to=2`, { session });
      expect(diff.status).to.equal(403);
      expect(diff.body.error.code).to.equal('plan_feature_unavailable');
      const restored = await ctx.server.request('POST', `${path}/versions/1/restore`, { session });
      expect(restored.status).to.equal(200);
      expect(restored.headers.get('x-document-version')).to.equal('3');
      expect(restored.body.n).to.equal(1);
      expect((await ctx.server.request('DELETE', path, { session })).status).to.equal(204);
    });

    it('names the account in version history as dashboard:<email>', async () => {
      const { session, email } = ctx.tenant;
      const created = await ctx.server.request('POST', data('test', '/hist'), { session, body: { a: 1 } });
      const versions = await ctx.server.request('GET', data('test', `/hist/${created.body._id}/versions`), {
        session,
      });
      expect(versions.body.versions[0].apiKeyHint).to.equal(`dashboard:${email}`);
    });

    it('manages the collection’s webhooks, the same ones its keys see', async () => {
      const { session, key, project } = ctx.tenant;
      const registered = await ctx.server.request('POST', data('test', '/orders/_webhooks'), {
        session,
        body: { url: 'http://127.0.0.1:9/folio', events: ['document.created'] },
      });
      expect(registered.status).to.equal(201);
      expect(registered.body.secret).to.match(/^whsec_/);
      const byKey = await ctx.server.request('GET', `/${project}/orders/_webhooks`, { key });
      expect(byKey.body.webhooks.map((w: { id: string }) => w.id)).to.deep.equal([registered.body.id]);
      const live = await ctx.server.request('GET', data('live', '/orders/_webhooks'), { session });
      expect(live.body.webhooks).to.deep.equal([]);
    });

    it('imports and exports through the session, into the environment it names', async () => {
      const { session, key, project } = ctx.tenant;
      const imported = await ctx.server.request('POST', data('test', '/people/_import'), {
        session,
        rawBody: '_id,name,age\nada,Ada,36\ngrace,Grace,45\n',
        contentType: 'text/csv',
      });
      expect(imported.status).to.equal(200);
      expect(imported.body).to.include({ imported: 2, skipped: 0, total: 2 });
      expect((await ctx.server.request('GET', `/${project}/people/ada`, { key })).body.age).to.equal(36);
      // fetch itself: the helper would read NDJSON as one JSON text.
      const exported = await fetch(`${ctx.server.url}${data('test', '/people/_export?sort=-age')}`, {
        headers: { Authorization: `Bearer ${session}`, Accept: 'application/x-ndjson' },
      });
      expect(exported.status).to.equal(200);
      const names = (await exported.text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).name);
      expect(names).to.deep.equal(['Grace', 'Ada']);
      const live = await ctx.server.request('GET', data('live', '/people/_export'), { session });
      expect(JSON.parse(live.text)).to.deep.equal([]);
    });

    it('with the cookie, writes need X-CSRF-Token (403 csrf_failed, nothing written) and reads do not', async () => {
      const email = `data-cookie-${Date.now()}@example.test`;
      const signup = await ctx.server.request('POST', '/api/auth/signup', {
        body: { email, password: 'correct horse battery' },
      });
      const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] as string;
      await ctx.server.request('POST', '/api/projects', {
        session: signup.body.token,
        body: { name: 'web' },
      });
      const refused = await ctx.server.request('POST', '/api/data/test/web/notes', {
        body: { a: 1 },
        headers: { Cookie: cookie },
      });
      expect(refused.status).to.equal(403);
      expect(refused.body.error.code).to.equal('csrf_failed');
      const empty = await ctx.server.request('GET', '/api/data/test/web/notes', {
        headers: { Cookie: cookie },
      });
      expect(empty.status).to.equal(200);
      expect(empty.body.meta.total).to.equal(0);
      const written = await ctx.server.request('POST', '/api/data/test/web/notes', {
        body: { a: 1 },
        headers: { Cookie: cookie, 'X-CSRF-Token': signup.body.csrfToken },
      });
      expect(written.status).to.equal(201);
    });

    it('refuses without a session (401), another account’s project or an unknown one (404), an unknown environment (404)', async () => {
      const other = await ctx.server.tenant({ project: 'private' });
      const anonymous = await ctx.server.request('GET', '/api/data/test/private/notes');
      expect(anonymous.status).to.equal(401);
      const foreign = await ctx.server.request('GET', '/api/data/test/private/notes', {
        session: ctx.tenant.session,
      });
      expect(foreign.status).to.equal(404);
      const own = await ctx.server.request('GET', '/api/data/test/private/notes', { session: other.session });
      expect(own.status).to.equal(200);
      const unknown = await ctx.server.request('GET', '/api/data/test/nope/notes', {
        session: other.session,
      });
      expect(unknown.status).to.equal(404);
      for (const env of ['prod', 'LIVE', 'tests']) {
        const res = await ctx.server.request('GET', `/api/data/${env}/private/notes`, {
          session: other.session,
        });
        expect(res.status, env).to.equal(404);
        expect(res.body.error.code).to.equal('not_found');
      }
    });

    it('a bad collection name is 400 and a wrong method 405, as on the keyed routes', async () => {
      const { session } = ctx.tenant;
      const bad = await ctx.server.request('GET', data('test', '/_bad'), { session });
      expect(bad.status).to.equal(400);
      const method = await ctx.server.request('PUT', data('test', '/notes'), { session, body: {} });
      expect(method.status).to.equal(405);
    });
  },
  // Webhook targets on this machine only (nothing is delivered: no write reaches `orders`).
  { config: { webhooks: { allowPrivateTargets: true } } },
);

describe('session-authenticated data routes: rate limit', () => {
  it('counts per account at the plan’s rate, with the X-RateLimit headers', async () => {
    const server = await startTestServer({
      config: { plans: { free: { requestsPerSecond: 3 } }, rateLimit: { windowMs: 60_000 } },
      realRateLimits: true,
    });
    try {
      const t = await server.tenant();
      const burst = [];
      for (let i = 0; i < 4; i++)
        burst.push(await server.request('GET', `/api/data/test/${t.project}/rl`, { session: t.session }));
      expect(burst.map((r) => r.status)).to.deep.equal([200, 200, 200, 429]);
      expect(burst[0]?.headers.get('x-ratelimit-limit')).to.equal('3');
      expect(burst[2]?.headers.get('x-ratelimit-remaining')).to.equal('0');
      expect(burst[3]?.body.error.code).to.equal('rate_limited');
      // The account's API keys keep their own budgets.
      expect((await server.request('GET', `/${t.project}/rl`, { key: t.key })).status).to.equal(200);
    } finally {
      await server.close();
    }
  });
});

describe('session-authenticated data routes: change stream', () => {
  it('streams a collection by session; logging that session out (not another) ends the stream', async () => {
    const server = await startTestServer({
      config: {
        streams: { heartbeatMs: 300, retryMs: 100, keyCheckMs: 100, bufferLimit: 50, maxPerKey: 10 },
      },
    });
    const clients: StreamClient[] = [];
    try {
      const t = await server.tenant({ plan: 'pro' });
      const client = new StreamClient(`${server.url}/api/data/test/${t.project}/notes/_stream`, t.session);
      clients.push(client);
      await client.opened;
      const created = await server.request('POST', `/${t.project}/notes`, { key: t.key, body: { a: 1 } });
      const [event] = await client.documents(1);
      expect(event).to.deep.include({ type: 'document.created' });
      expect(event?.data.document._id).to.equal(created.body._id);
      // Another session of the same account ends: this stream goes on.
      const other = await server.request('POST', '/api/auth/login', {
        body: { email: t.email, password: 'correct horse battery' },
      });
      await server.request('POST', '/api/auth/logout', { session: other.body.token });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.request('POST', `/${t.project}/notes`, { key: t.key, body: { a: 2 } });
      expect((await client.documents(1))[0]?.data.document.a).to.equal(2);
      // Its own session ends: the stream closes, saying why.
      await server.request('POST', '/api/auth/logout', { session: t.session });
      const closed = await client.next(['stream.closed'], 5000);
      expect(closed.data.reason).to.equal('session_ended');
    } finally {
      for (const client of clients) client.close();
      await server.close();
    }
  });
});
