/**
 * One attempt at a time per delivery: the lock rule as a pure function at its boundaries, and
 * over a real embedded store, real Agenda (JobRunner) and a real receiver that answers slower
 * than Agenda's lock lifetime as it was before (poll + attempt timeout + 1 s): every delivery
 * id arrives once per attempt, and two runs of one delivery at once make one attempt.
 */
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { JobRunner } from '../../src/jobs/jobRunner.js';
import { createServices } from '../../src/services/index.js';
import { attemptLockTtlMs, mayTakeAttemptLock } from '../../src/store/attemptLock.js';
import type { DataScope, Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { startDeliveryRunner } from '../support/deliveryRunner.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { deliveryTask, seedTenantScope, seedWebhookOn } from '../support/webhookSeed.js';

describe('webhook attempt lock: the rule', () => {
  it('is free when absent, the holder’s own, or expired exactly at its time', () => {
    const now = 1_000_000;
    expect(mayTakeAttemptLock(undefined, 'a', now)).to.equal(true);
    expect(mayTakeAttemptLock({ holder: 'a', expiresAtMs: now + 5_000 }, 'a', now)).to.equal(true);
    expect(mayTakeAttemptLock({ holder: 'b', expiresAtMs: now + 1 }, 'a', now)).to.equal(false);
    expect(mayTakeAttemptLock({ holder: 'b', expiresAtMs: now }, 'a', now)).to.equal(true);
  });

  it('lasts three attempt time limits, and never under 30 s', () => {
    expect(attemptLockTtlMs(10_000)).to.equal(30_000);
    expect(attemptLockTtlMs(10_001)).to.equal(30_003);
    expect(attemptLockTtlMs(1_000)).to.equal(30_000);
  });
});

const TIMEOUT_MS = 1_000;
const POLL_MS = 40;
/** Agenda's lock lifetime as it was: poll + attempt timeout + 1 s. */
const OLD_LOCK_LIFETIME_MS = POLL_MS + TIMEOUT_MS + 1_000;

const config = loadConfig({}, [
  {
    dataDir: tmpdir(),
    webhooks: { allowPrivateTargets: true, backoffBaseMs: 20, pollMs: POLL_MS, timeoutMs: 10_000 },
  },
]);

async function seedWebhook(store: Store, url: string): Promise<{ scope: DataScope; webhookId: string }> {
  const scope = await seedTenantScope(store);
  return { scope, webhookId: await seedWebhookOn(store, scope, 'orders', url) };
}

describe('webhook attempt lock: a receiver slower than the old Agenda lock [embedded]', function () {
  this.timeout(30_000);
  let store: Store;
  let receiver: Receiver;
  const runners: JobRunner[] = [];
  beforeEach(async () => {
    store = await createTempEmbeddedStore();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    for (const runner of runners.splice(0)) await runner.stop();
    await receiver.close();
    await destroyTempEmbeddedStore(store);
  });

  it('receives each delivery id once per attempt, with two job runners on one store', async () => {
    const { scope, webhookId } = await seedWebhook(store, `${receiver.url}/slow`);
    receiver.delayMs = OLD_LOCK_LIFETIME_MS + 300;
    const logger = pino({ level: 'silent' });
    for (let i = 0; i < 2; i++) {
      const { jobs } = await startDeliveryRunner(store, config, logger, {
        pollMs: POLL_MS,
        concurrency: 5,
        attemptTimeoutMs: 10_000,
      });
      runners.push(jobs);
    }
    const tasks = [0, 1, 2].map((n) => deliveryTask(n, scope, webhookId));
    for (const t of tasks) await runners[0]!.enqueueDelivery(t);
    await receiver.waitFor(3, () => true, 15_000);
    // Long enough for a second, duplicate attempt to have arrived, had one started.
    await new Promise((r) => setTimeout(r, OLD_LOCK_LIFETIME_MS + receiver.delayMs));
    const ids = receiver.requests.map((r) => r.headers['x-service-delivery-id']);
    expect(ids.sort()).to.deep.equal(tasks.map((t) => t.deliveryId).sort());
    for (const t of tasks) {
      const record = await store.deliveries.get(t.deliveryId);
      expect(record?.status).to.equal('succeeded');
      expect(record?.attempts).to.have.length(1);
    }
  });

  it('makes one attempt when two runs of one delivery start at once, and records it once', async () => {
    const { scope, webhookId } = await seedWebhook(store, `${receiver.url}/twice`);
    receiver.delayMs = 300;
    const services = createServices(store, config, pino({ level: 'silent' }));
    const t = deliveryTask(1, scope, webhookId);
    const signal = new AbortController().signal;
    const [a, b] = await Promise.all([
      services.deliveries.run(t, signal),
      services.deliveries.run(t, signal),
    ]);
    expect(receiver.requests).to.have.length(1);
    // The run that found the lock taken records nothing and asks to look again later.
    expect([a, b].filter((next) => next === null)).to.have.length(1);
    const record = await store.deliveries.get(t.deliveryId);
    expect(record?.attempts).to.have.length(1);
    // Looked at again later, the delivery is over: no second attempt.
    expect(await services.deliveries.run(t, signal)).to.equal(null);
    expect(receiver.requests).to.have.length(1);
  });
});
