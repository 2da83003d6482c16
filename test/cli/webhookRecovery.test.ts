/**
 * Webhook deliveries survive the process: `folio serve` as a child process, stopped with
 * SIGTERM or killed with SIGKILL (kill -9) in the middle of a retry schedule, then started again
 * on the same data directory. Every delivery still succeeds, exactly once per success, with the
 * same delivery id on every attempt.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { devAccount, type FolioProcess, serveFolio } from '../support/folioProcess.js';
import { type ReceivedRequest, type Receiver, startReceiver } from '../support/receiver.js';

const ENV = {
  FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true',
  FOLIO_WEBHOOKS_BACKOFF_BASE_MS: '400',
  FOLIO_WEBHOOKS_POLL_MS: '50',
  FOLIO_WEBHOOKS_TIMEOUT_MS: '500',
};

/** `folio serve` on `dataDir` with quick webhook retries. */
function start(dataDir: string): Promise<FolioProcess> {
  return serveFolio({ FOLIO_DATA_DIR: dataDir, ...ENV });
}

async function call(folio: FolioProcess, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${folio.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as { _id: string; id: string } };
}

const successes = (receiver: Receiver, documentId: string) =>
  receiver.requests.filter((r) => r.body.documentId === documentId && r.status === 200);
const attemptsFor = (receiver: Receiver, documentId: string) =>
  receiver.requests.filter((r) => r.body.documentId === documentId);
const idsOf = (requests: ReceivedRequest[]) =>
  new Set(requests.map((r) => r.headers['x-service-delivery-id']));

describe('webhook deliveries across restarts and crashes (folio serve)', function () {
  this.timeout(60_000);
  let dataDir: string;
  let receiver: Receiver;
  let folio: FolioProcess | null = null;
  let key: string;
  let project: string;

  // Each test gets its own store, receiver and running server: the tests stop and kill the
  // server, so none may rely on the process (or the deliveries) another test left behind.
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-webhooks-'));
    receiver = await startReceiver();
    folio = await start(dataDir);
    ({ key, project } = devAccount(folio));
    const hook = await call(folio, key, 'POST', `/${project}/orders/_webhooks`, {
      url: `${receiver.url}/hook`,
      events: ['document.created'],
    });
    expect(hook.status).to.equal(201);
  });

  afterEach(async () => {
    if (folio && folio.child.exitCode === null && folio.child.signalCode === null) {
      const exited = once(folio.child, 'exit');
      folio.child.kill('SIGKILL');
      // Gone before its data directory is removed.
      await exited;
    }
    folio = null;
    await receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('SIGTERM during a retry schedule exits at once, and the next start delivers exactly once', async () => {
    const running = folio as FolioProcess;
    receiver.respond = () => 500;
    const { body: doc } = await call(running, key, 'POST', `/${project}/orders`, { step: 'sigterm' });
    await receiver.waitFor(1, (r) => r.body.documentId === doc._id);

    const started = Date.now();
    const exited = once(running.child, 'exit');
    running.child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).to.equal(0);
    // Nothing waits for Agenda's timers or the pending retry (400 ms+ away).
    expect(Date.now() - started).to.be.below(5_000);

    receiver.respond = () => 200;
    folio = await start(dataDir);
    await receiver.waitFor(1, (r) => r.body.documentId === doc._id && r.status === 200, 15_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(successes(receiver, doc._id)).to.have.length(1);
    expect(idsOf(attemptsFor(receiver, doc._id)).size).to.equal(1);
  });

  // A crash case (13 s of restarts and waiting out a dead process's lock): `npm run test:slow`.
  it('kill -9 mid-schedule (and right after a write) loses nothing and repeats no success @slow', async () => {
    let running = folio as FolioProcess;
    receiver.respond = () => 200;
    const { body: before } = await call(running, key, 'POST', `/${project}/orders`, { step: 'before' });
    await receiver.waitFor(1, (r) => r.body.documentId === before._id && r.status === 200);

    receiver.respond = () => 500;
    const { body: retrying } = await call(running, key, 'POST', `/${project}/orders`, { step: 'retrying' });
    await receiver.waitFor(1, (r) => r.body.documentId === retrying._id);
    const { body: last } = await call(running, key, 'POST', `/${project}/orders`, { step: 'last' });
    const killed = once(running.child, 'exit');
    running.child.kill('SIGKILL');
    await killed;

    receiver.respond = () => 200;
    running = await start(dataDir);
    folio = running;
    for (const doc of [retrying, last]) {
      await receiver.waitFor(1, (r) => r.body.documentId === doc._id && r.status === 200, 20_000);
    }
    // Longer than a stale lock (poll + timeout + 1 s) and the retry schedule: nothing more comes.
    await new Promise((r) => setTimeout(r, 2_500));
    for (const doc of [before, retrying, last]) {
      expect(successes(receiver, doc._id), doc._id).to.have.length(1);
      expect(idsOf(attemptsFor(receiver, doc._id)).size, doc._id).to.equal(1);
    }

    const exited = once(running.child, 'exit');
    running.child.kill('SIGTERM');
    expect((await exited)[0]).to.equal(0);
  });
});
