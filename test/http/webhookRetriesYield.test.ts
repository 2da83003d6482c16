/**
 * Heavy writes go first, on a real server over HTTP: with retries of failing deliveries due all
 * the time (a receiver answering 500, a short backoff), bulk writes of 100 documents back to back
 * (far over the gate's 1,000 documents a second) hold every retry back (none reaches the receiver
 * while they go on, shorter than the gate's longest wait), and the retries resume once the writes
 * stop; a light trickle of single writes holds none back. The server's own signal: its store's
 * count of documents written (src/jobs/writeGate.ts).
 *
 * In `npm run test:slow`: it judges by wall-clock rates, which a busy machine's stalls break (a
 * 250 ms window with a paused writer opens the gate, as it should). The rule itself, over a
 * counter the test moves and a real JobRunner, is in test/services/webhookRetryWriteGate.test.ts.
 */
import { expect } from 'chai';
import { RETRY_WRITE_GATE } from '../../src/jobs/writeGate.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const DELIVERIES = 40;
/** Writers sending bulk requests of BULK documents back to back. */
const WRITERS = 3;
const BULK = 100;
/** How long the writes go on: within the gate's longest wait, so no retry may start. */
const WRITING_MS = RETRY_WRITE_GATE.maxWaitMs - 500;
/** Attempts that passed the gate just before the first write still arrive within this. */
const SETTLE_MS = 300;

describe('webhook retries beside writes (real server)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let receiver: Receiver;
  let tenant: Tenant;

  before(async () => {
    receiver = await startReceiver();
    server = await startTestServer({
      config: { webhooks: { allowPrivateTargets: true, backoffBaseMs: 100, pollMs: 100 } },
    });
    // Team plan: 8 retries each, so retries keep falling due for several seconds.
    tenant = await server.tenant({ plan: 'team' });
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  it('holds due retries back while writes are heavy, lets them go after, and not for a trickle @slow', async () => {
    receiver.respond = (r) => (String(r.path).startsWith('/down') ? 500 : 200);
    const hook = await server.request('POST', `/${tenant.project}/down/_webhooks`, {
      key: tenant.key,
      body: { url: `${receiver.url}/down`, events: ['document.created'] },
    });
    expect(hook.status).to.equal(201);
    const docs = Array.from({ length: DELIVERIES }, (_, i) => `${JSON.stringify({ i })}\n`).join('');
    const imported = await fetch(`${server.url}/${tenant.project}/down/_import`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/x-ndjson' },
      body: docs,
    });
    expect(imported.status).to.equal(200);
    await imported.text();
    // Every first attempt failed and the retries are under way: as many answers again.
    await receiver.waitFor(2 * DELIVERIES, (r) => r.path.startsWith('/down'), 20_000);

    const started = Date.now();
    let writes = 0;
    const writer = async () => {
      while (Date.now() - started < WRITING_MS) {
        const operations = Array.from({ length: BULK }, (_, i) => ({ method: 'POST', body: { i } }));
        const res = await server.request('POST', `/${tenant.project}/plain/_bulk`, {
          key: tenant.key,
          body: { operations },
        });
        expect(res.status).to.equal(207);
        writes += BULK;
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, writer));
    const ended = Date.now();
    // A retry waits at most maxWaitMs, by design: one that fell due as the writes began may go
    // once that has passed, which a loaded machine's last bulk can outlast.
    const gateHeld = Math.min(ended, started + RETRY_WRITE_GATE.maxWaitMs);
    const during = retriesAt().filter((at) => at >= started + SETTLE_MS && at <= gateHeld);
    const perSecond = (writes * 1_000) / (ended - started);
    expect(perSecond, 'documents written per second').to.be.greaterThan(
      (2 * RETRY_WRITE_GATE.maxDocuments * 1_000) / RETRY_WRITE_GATE.windowMs,
    );
    expect(during, 'retries that reached the receiver while writes were heavy').to.deep.equal([]);

    // The retries were held, not lost: they come again once the writes stop.
    await receiver.waitFor(1, (r) => r.path.startsWith('/down') && r.at > ended, 10_000);

    // A light trickle (about 20 writes a second) holds none back: retries arrive while it goes on.
    const trickleStarted = Date.now();
    while (Date.now() - trickleStarted < WRITING_MS) {
      const res = await server.request('POST', `/${tenant.project}/plain`, { key: tenant.key, body: {} });
      expect(res.status).to.equal(201);
      await new Promise((r) => setTimeout(r, 50));
    }
    const beside = retriesAt().filter((at) => at >= trickleStarted + SETTLE_MS);
    expect(beside.length, 'retries that reached the receiver beside a trickle of writes').to.be.greaterThan(
      0,
    );
  });

  const retriesAt = () => receiver.requests.filter((r) => r.path.startsWith('/down')).map((r) => r.at);
});
