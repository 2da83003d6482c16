/**
 * Partitioned dispatch: the partition rules as pure functions, and on the embedded store
 * several dispatchers in one process (two "instances" of two partitions' share each, over four
 * partitions) sharing the feed: every event delivered once, each partition read by one of
 * them with its own saved position, and the survivors taking over a stopped instance's share.
 */
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { JobRunner } from '../../src/jobs/jobRunner.js';
import { WebhookDispatcher } from '../../src/services/webhooks/dispatcher.js';
import {
  acquireDelayMs,
  DISPATCHER_NAME,
  leaseName,
  partitionOf,
  partitions,
} from '../../src/services/webhooks/partitions.js';
import type { DataScope, Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { firstVersion, putWrite } from '../store/fixtures.js';
import { startDeliveryRunner } from '../support/deliveryRunner.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { until } from '../support/timeout.js';
import { seedTenantScope, seedWebhookOn } from '../support/webhookSeed.js';

describe('webhook partitions: rules', () => {
  it('puts a collection in one partition in range, the same every time, and all in 0 of 1', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.constantFrom('live', 'test'),
        fc.string(),
        fc.integer({ min: 1, max: 64 }),
        (p, env, c, n) => {
          const scope = { projectId: p, env: env as DataScope['env'] };
          const index = partitionOf(scope, c, n);
          expect(index).to.be.within(0, n - 1);
          expect(partitionOf(scope, c, n)).to.equal(index);
          expect(partitionOf(scope, c, 1)).to.equal(0);
        },
      ),
    );
  });

  it('spreads collections evenly and tells scopes and environments apart', () => {
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[partitionOf({ projectId: 'prj_1', env: 'live' }, `c${i}`, 4)]! += 1;
    for (const n of counts) expect(n).to.be.within(850, 1150);
    const differs = Array.from({ length: 64 }, (_, i) => `c${i}`).some(
      (c) =>
        partitionOf({ projectId: 'p', env: 'live' }, c, 8) !==
        partitionOf({ projectId: 'p', env: 'test' }, c, 8),
    );
    expect(differs).to.equal(true);
  });

  it('names one partition as the single dispatcher always was, and several apart', () => {
    expect(leaseName({ index: 0, count: 1 })).to.equal(DISPATCHER_NAME);
    expect(partitions(3).map(leaseName)).to.deep.equal([
      `${DISPATCHER_NAME}/0-of-3`,
      `${DISPATCHER_NAME}/1-of-3`,
      `${DISPATCHER_NAME}/2-of-3`,
    ]);
    expect(() => partitions(0)).to.throw();
  });

  it('takes a free lease at once under the fair share, one lease period later per lease over it', () => {
    expect(acquireDelayMs(0, 2, 900)).to.equal(0);
    expect(acquireDelayMs(1, 2, 900)).to.equal(0);
    expect(acquireDelayMs(2, 2, 900)).to.equal(900);
    expect(acquireDelayMs(3, 2, 900)).to.equal(1800);
  });
});

const LEASE_MS = 400;
const PARTITIONS = 4;
const COLLECTIONS = 12;

const config = loadConfig({}, [
  { dataDir: tmpdir(), webhooks: { allowPrivateTargets: true, pollMs: 40, timeoutMs: 2000 } },
]);

interface Instance {
  jobs: JobRunner;
  dispatchers: WebhookDispatcher[];
}

async function startInstance(store: Store): Promise<Instance> {
  const logger = pino({ level: 'silent' });
  const { jobs, services } = await startDeliveryRunner(store, config, logger);
  const held = { count: 0, share: PARTITIONS / 2 };
  const dispatchers = partitions(PARTITIONS).map(
    (partition) =>
      new WebhookDispatcher(
        store,
        services.deliveries,
        jobs,
        { leaseMs: LEASE_MS, saveEveryMs: 0, concurrency: 8, partition, held },
        logger,
      ),
  );
  for (const d of dispatchers) d.start();
  return { jobs, dispatchers };
}

async function stopInstance(instance: Instance): Promise<void> {
  await Promise.all(instance.dispatchers.map((d) => d.stop()));
  await instance.jobs.stop();
}

describe('webhook partitions: several dispatchers on one embedded store', function () {
  this.timeout(40_000);
  let store: Store;
  let receiver: Receiver;
  beforeEach(async () => {
    store = await createTempEmbeddedStore();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await receiver.close();
    await destroyTempEmbeddedStore(store);
  });

  it('share the partitions, deliver every event once, and take over a stopped instance’s share', async () => {
    const scope = await seedTenantScope(store);
    const collections = Array.from({ length: COLLECTIONS }, (_, i) => `c${i}`);
    for (const collection of collections) {
      await seedWebhookOn(store, scope, collection, `${receiver.url}/${collection}`);
    }
    // The collections fall in more than one partition.
    expect(new Set(collections.map((c) => partitionOf(scope, c, PARTITIONS))).size).to.be.greaterThan(1);
    const commitAll = async (round: number) => {
      const ids: string[] = [];
      for (const collection of collections) {
        const doc = firstVersion({ round });
        const result = await store.documents.commit(scope, collection, [putWrite(doc)]);
        if (!result.ok) throw new Error('conflict');
        ids.push(doc._id);
      }
      return ids;
    };

    const a = await startInstance(store);
    const b = await startInstance(store);
    const leading = (i: Instance) => i.dispatchers.filter((d) => d.leading).length;
    // Each instance ends with its fair share (the first to start gives up what is over it);
    // no partition is ever read by two at once.
    await until(() => leading(a) === 2 && leading(b) === 2, 'a fair share each', LEASE_MS * 30);
    for (let p = 0; p < PARTITIONS; p++) {
      expect(Number(a.dispatchers[p]!.leading) + Number(b.dispatchers[p]!.leading)).to.equal(1);
    }

    const first = await commitAll(1);
    await receiver.waitFor(COLLECTIONS);
    await stopInstance(a);
    await until(() => leading(b) === PARTITIONS, 'the take-over', LEASE_MS * 20);
    const second = await commitAll(2);
    await receiver.waitFor(2 * COLLECTIONS);
    await new Promise((r) => setTimeout(r, 300));
    await stopInstance(b);

    const received = receiver.requests.map((r) => r.body.documentId as string).sort();
    expect(received).to.deep.equal([...first, ...second].sort());
    // Each request went to its own collection's webhook.
    for (const r of receiver.requests) expect(r.path).to.equal(`/${r.body.collection}`);
    // Each partition keeps a position of its own.
    for (const partition of partitions(PARTITIONS)) {
      expect(await store.consumers.position(leaseName(partition))).to.be.a('string');
    }
  });
});
