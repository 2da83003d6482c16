/**
 * Stream tickets (`POST /{ns}/{collection}/_stream/tickets`, then `GET .../_stream?ticket=`),
 * and revocation closing streams at once in the process that revokes.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import type { ConfigOverrides } from '../../src/config/load.js';
import { mongoServerOverrides } from '../support/mongodb.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { RawStream } from '../support/sseText.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// keyCheckMs is long: a stream closed within the test's wait was closed by the revocation itself.
const CONFIG: ConfigOverrides = {
  streams: {
    heartbeatMs: 300,
    retryMs: 100,
    keyCheckMs: 60_000,
    bufferLimit: 50,
    maxPerKey: 10,
    ticketTtlMs: 1500,
  },
};

describe('change stream tickets and revocation [embedded]', function () {
  this.timeout(30_000);
  let server: TestServer;
  let tenant: Tenant;
  const streams: RawStream[] = [];

  before(async () => {
    server = await startTestServer({ config: CONFIG });
    tenant = await server.tenant({ plan: 'pro' });
  });
  after(async () => server.close());
  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });

  const mint = async (key: string, collection: string) =>
    server.request('POST', `/${tenant.project}/${collection}/_stream/tickets`, { key });
  const open = async (path: string, headers: Record<string, string> = {}) => {
    const stream = await RawStream.open(`${server.url}${path}`, headers);
    streams.push(stream);
    return stream;
  };
  const post = async (collection: string, body: object) => {
    const res = await server.request('POST', `/${tenant.project}/${collection}`, { key: tenant.key, body });
    expect(res.status).to.equal(201);
    return res.body._id as string;
  };

  it('a read-only key mints a ticket; the stream opens with it alone, starts with an id, and streams', async () => {
    const readOnly = await tenant.newKey({ scope: 'read-only' });
    const res = await mint(readOnly.rawKey, 'tickets');
    expect(res.status, res.text).to.equal(201);
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const { ticket, expiresAt, url } = res.body;
    expect(ticket).to.match(/^st1_[A-Za-z0-9_-]+$/);
    expect(url).to.equal(`/${tenant.project}/tickets/_stream?ticket=${ticket}`);
    // The key is not in the ticket (sealed; nor its hash in clear).
    expect(url).not.to.include(readOnly.rawKey);
    expect(Buffer.from(ticket.slice(4), 'base64url').toString('latin1')).not.to.include(readOnly.rawKey);
    expect(Date.parse(expiresAt) - Date.now()).to.be.within(0, 1500);
    const stream = await open(url);
    expect(stream.status).to.equal(200);
    // Its resume point first, so even a reconnection before any event carries a Last-Event-ID.
    await stream.until(/^retry: 100\nid: evt_\S+\n\n/);
    const id = await post('tickets', { n: 1 });
    await stream.until(/event: document.created/);
    expect(stream.documentIds).to.deep.equal([id]);
  });

  it('opens one new stream per ticket; a reconnection with Last-Event-ID resumes with the same ticket', async () => {
    const { ticket, url } = (await mint(tenant.key, 'once')).body;
    const first = await open(url);
    expect(first.status).to.equal(200);
    const startId = (await first.until(/^retry: \d+\nid: (\S+)\n\n/))[1]!;
    // A second new stream: refused (401, one answer for every refusal).
    const again = await open(url);
    expect(again.status).to.equal(401);
    await again.ended();
    expect(JSON.parse(again.text).error.code).to.equal('unauthorized');
    // The EventSource reconnecting (after a cut) with its start id: resumes, nothing lost.
    first.close();
    const missed = await post('once', { n: 1 });
    const resumed = await open(url, { 'Last-Event-ID': startId });
    expect(resumed.status).to.equal(200);
    await resumed.until(/event: document.created/);
    expect(resumed.documentIds).to.deep.equal([missed]);
    // A reconnection with an id that is not the tenant's: 410 like any unresumable id.
    const forged = await open(url, { 'Last-Event-ID': 'e1_AAAA' });
    expect(forged.status).to.equal(410);
    expect(ticket).to.be.a('string');
  });

  it('refuses a ticket of another collection, an altered or forged one, and one past streams.ticketTtlMs', async () => {
    const { ticket } = (await mint(tenant.key, 'mine')).body;
    const other = await open(`/${tenant.project}/theirs/_stream?ticket=${ticket}`);
    expect(other.status).to.equal(401);
    const altered = `${ticket.slice(0, -3)}${ticket.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    for (const bad of [altered, 'st1_', 'nonsense', `st1_${'A'.repeat(80)}`]) {
      const res = await open(`/${tenant.project}/mine/_stream?ticket=${encodeURIComponent(bad)}`);
      expect(res.status, bad).to.equal(401);
    }
    // Just in time: opens. Past the time to live: refused.
    const late = (await mint(tenant.key, 'mine')).body;
    await sleep(1600);
    expect((await open(late.url)).status).to.equal(401);
    // A ticket never stands in for a key elsewhere.
    const res = await fetch(`${server.url}/${tenant.project}/mine?ticket=${ticket}`);
    expect(res.status).to.equal(401);
    const ok = await open((await mint(tenant.key, 'mine')).body.url);
    expect(ok.status).to.equal(200);
  });

  it('answers any made-up Last-Event-ID exactly as an expired one, and any made-up ticket with one 401', async () => {
    const headerText = fc.stringMatching(/^[\x21-\x7e]{1,120}$/);
    const bodyOf = async (headers: Record<string, string>, path = `/${tenant.project}/fuzz/_stream`) => {
      const res = await fetch(`${server.url}${path}`, {
        headers: { Accept: 'text/event-stream', ...headers },
      });
      return { status: res.status, body: await res.text() };
    };
    const auth = { Authorization: `Bearer ${tenant.key}` };
    const expired = await bodyOf({ ...auth, 'Last-Event-ID': 'evt_reset' });
    expect(expired.status).to.equal(410);
    const refusedTicket = await bodyOf({}, `/${tenant.project}/fuzz/_stream?ticket=st1_x`);
    expect(refusedTicket.status).to.equal(401);
    await fc.assert(
      fc.asyncProperty(headerText, async (made) => {
        expect(await bodyOf({ ...auth, 'Last-Event-ID': made })).to.deep.equal(expired);
        expect(
          await bodyOf({}, `/${tenant.project}/fuzz/_stream?ticket=${encodeURIComponent(made)}`),
        ).to.deep.equal(refusedTicket);
      }),
      { numRuns: 60 },
    );
  });

  it('a plan without streams mints no ticket (403)', async () => {
    const free = await server.tenant({ plan: 'free' });
    const res = await server.request('POST', `/${free.project}/x/_stream/tickets`, { key: free.key });
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('plan_feature_unavailable');
  });

  it('revoking or rotating a key closes its streams (keyed and by ticket) at once, not at the next check', async () => {
    const revoked = await tenant.newKey();
    const rotated = await tenant.newKey();
    const keyed = await open(`/${tenant.project}/rev/_stream`, { Authorization: `Bearer ${revoked.rawKey}` });
    const byTicket = await open(
      (await server.request('POST', `/${tenant.project}/rev/_stream/tickets`, { key: revoked.rawKey })).body
        .url,
    );
    const ticketOfRotated = (
      await server.request('POST', `/${tenant.project}/rev/_stream/tickets`, { key: rotated.rawKey })
    ).body.url;
    const rotatedStream = await open(`/${tenant.project}/rev/_stream`, {
      Authorization: `Bearer ${rotated.rawKey}`,
    });
    const other = await open(`/${tenant.project}/rev/_stream`, { Authorization: `Bearer ${tenant.key}` });
    for (const s of [keyed, byTicket, rotatedStream, other]) await s.until(/^retry/);
    const session = tenant.session;
    expect((await server.request('DELETE', `/api/keys/${revoked.id}`, { session })).status).to.equal(204);
    expect((await server.request('POST', `/api/keys/${rotated.id}/rotate`, { session })).status).to.equal(
      201,
    );
    // keyCheckMs is a minute: these close now because this process revoked the keys.
    for (const s of [keyed, byTicket, rotatedStream]) {
      await s.until(/"reason":"key_revoked"/, 3000);
      await s.ended();
    }
    // Others stream on; the revoked key's ticket reconnects no more.
    const id = await post('rev', { n: 1 });
    await other.until(/event: document.created/);
    expect(other.documentIds).to.deep.equal([id]);
    expect(keyed.documentIds).to.deep.equal([]);
    const reconnect = await open(ticketOfRotated, { 'Last-Event-ID': 'e1_x' });
    expect(reconnect.status).to.equal(401);
  });

  it('logging a session out closes its dashboard streams at once', async () => {
    const login = await server.request('POST', '/api/auth/login', {
      body: { email: tenant.email, password: 'correct horse battery' },
    });
    expect(login.status, login.text).to.equal(200);
    const session = login.body.token as string;
    const dashboard = await open(`/api/data/test/${tenant.project}/dash/_stream`, {
      Authorization: `Bearer ${session}`,
    });
    expect(dashboard.status).to.equal(200);
    await dashboard.until(/^retry/);
    expect((await server.request('POST', '/api/auth/logout', { session })).status).to.be.oneOf([200, 204]);
    await dashboard.until(/"reason":"session_ended"/, 3000);
    await dashboard.ended();
  });
});

/**
 * Two instances sharing one store: only MongoDB allows it (the embedded store locks its data
 * directory), so this runs where a MongoDB is (`npm run test:mongodb`) and is skipped here.
 */
for (const target of await mongoServerOverrides()) {
  describe(`change streams across two instances on one store [${target.name}]`, function () {
    this.timeout(60_000);
    let a: TestServer;
    let b: TestServer;
    let tenant: Tenant;

    before(async () => {
      const config: ConfigOverrides = {
        ...(await target.overrides()),
        streams: { heartbeatMs: 300, retryMs: 100, keyCheckMs: 300, bufferLimit: 50, maxPerKey: 10 },
      };
      a = await startTestServer({ config });
      b = await startTestServer({ config });
      tenant = await a.tenant({ plan: 'pro' });
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    it('a ticket minted on one opens on the other; an id from one resumes on the other; a key revoked on one closes its streams on the other within streams.keyCheckMs', async () => {
      const key = await tenant.newKey();
      const minted = await a.request('POST', `/${tenant.project}/shared/_stream/tickets`, {
        key: key.rawKey,
      });
      const onB = await RawStream.open(`${b.url}${minted.body.url}`, {});
      try {
        expect(onB.status).to.equal(200);
        await onB.until(/^retry/);
        const written = await a.request('POST', `/${tenant.project}/shared`, {
          key: tenant.key,
          body: { n: 1 },
        });
        await onB.until(/event: document.created/, 10_000);
        const id = /\nid: (evt_\S+)\ndata: /.exec(onB.text)![1]!;
        expect(onB.documentIds).to.deep.equal([written.body._id]);
        // An id B sent resumes on A.
        const missed = await b.request('POST', `/${tenant.project}/shared`, {
          key: tenant.key,
          body: { n: 2 },
        });
        const onA = await RawStream.open(`${a.url}/${tenant.project}/shared/_stream`, {
          Authorization: `Bearer ${tenant.key}`,
          'Last-Event-ID': id,
        });
        await onA.until(/event: document.created/, 10_000);
        expect(onA.documentIds).to.deep.equal([missed.body._id]);
        onA.close();
        // Revoked through A: B's stream closes at its next key check.
        expect(
          (await a.request('DELETE', `/api/keys/${key.id}`, { session: tenant.session })).status,
        ).to.equal(204);
        await onB.until(/"reason":"key_revoked"/, 5000);
      } finally {
        onB.close();
      }
    });

    it('rules changed through one close the key’s streams on the other within streams.keyCheckMs', async () => {
      const key = await tenant.newKey();
      const onB = await RawStream.open(`${b.url}/${tenant.project}/shared/_stream`, {
        Authorization: `Bearer ${key.rawKey}`,
      });
      try {
        await onB.until(/^retry/);
        const rules = [{ collections: ['shared'], access: 'read', filter: { n: 1 } }];
        const changed = await a.request('PATCH', `/api/keys/${key.id}`, {
          session: tenant.session,
          body: { rules },
        });
        expect(changed.status).to.equal(200);
        await onB.until(/"reason":"rules_changed"/, 5000);
      } finally {
        onB.close();
      }
    });
  });
}
