/**
 * Writes go first, on a real server over HTTP: with retries of failing deliveries due all the
 * time (a receiver answering 500, a short backoff), document writes committing without pause
 * hold every retry back (none reaches the receiver while they commit, shorter than the gate's
 * longest wait), and the retries resume once the writes stop. The server's own signal: its
 * store's committed groups of document writes (src/jobs/writeGate.ts).
 */
import { expect } from 'chai';
import { RETRY_WRITE_GATE } from '../../src/jobs/writeGate.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const DELIVERIES = 40;
/** Writers sending single writes back to back: their commits leave no quarter-second gap. */
const WRITERS = 6;
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

  it('holds due retries back while writes commit, and lets them go after', async () => {
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
        const res = await server.request('POST', `/${tenant.project}/plain`, {
          key: tenant.key,
          body: { n: writes },
        });
        expect(res.status).to.equal(201);
        writes += 1;
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, writer));
    const ended = Date.now();
    const retriesAt = () => receiver.requests.filter((r) => r.path.startsWith('/down')).map((r) => r.at);
    const during = retriesAt().filter((at) => at >= started + SETTLE_MS && at <= ended);
    expect(writes).to.be.greaterThan(0);
    expect(during, 'retries that reached the receiver while writes were committing').to.deep.equal([]);

    // The retries were held, not lost: they come again once the writes stop.
    await receiver.waitFor(1, (r) => r.path.startsWith('/down') && r.at > ended, 10_000);
  });
});
