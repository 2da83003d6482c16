/**
 * The webhook dispatcher over a real store, a real Agenda (JobRunner) and a real receiver:
 * a replayed stretch of the change feed is delivered once, a lost history is logged and reading
 * goes on from now, and of several dispatchers one reads at a time (lease), another taking
 * over when it stops. On MongoDB (when available) the dispatchers run on two separate
 * connections, as two Folio instances would.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import type { JobRunner } from '../../src/jobs/jobRunner.js';
import { DISPATCHER_NAME, WebhookDispatcher } from '../../src/services/webhooks/dispatcher.js';
import { DELIVERY_JOB } from '../../src/store/deliveryJob.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import type { ChangeEvent, DataScope, Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { firstVersion, putWrite } from '../store/fixtures.js';
import { startDeliveryRunner } from '../support/deliveryRunner.js';
import { dropDatabases, mongoConnection } from '../support/mongodb.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { until } from '../support/timeout.js';
import { seedTenantScope, seedWebhookOn } from '../support/webhookSeed.js';

const LEASE_MS = 600;

const config = loadConfig({}, [
  {
    dataDir: tmpdir(),
    webhooks: {
      allowPrivateTargets: true,
      backoffBaseMs: 20,
      pollMs: 40,
      timeoutMs: 2000,
      dispatcherLeaseMs: LEASE_MS,
    },
  },
]);

interface Instance {
  store: Store;
  jobs: JobRunner;
  dispatcher: WebhookDispatcher;
}

/** Every event of the store's feed from now on, until `stop()`. */
async function collectFeed(store: Store): Promise<{ events: ChangeEvent[]; stop(): Promise<void> }> {
  const events: ChangeEvent[] = [];
  const watcher = store.changes.watchAll();
  await watcher.ready;
  const collecting = (async () => {
    for await (const event of watcher) events.push(event);
  })();
  return {
    events,
    stop: async () => {
      watcher.close();
      await collecting;
    },
  };
}

async function startInstance(
  store: Store,
  logger = pino({ level: 'silent' }),
  tuning: { concurrency?: number; maxOpenEvents?: number } = {},
): Promise<Instance> {
  const { jobs, services } = await startDeliveryRunner(store, config, logger);
  const dispatcher = new WebhookDispatcher(
    store,
    services.deliveries,
    jobs,
    {
      leaseMs: LEASE_MS,
      saveEveryMs: 0,
      concurrency: tuning.concurrency ?? 8,
      maxOpenEvents: tuning.maxOpenEvents,
    },
    logger,
  );
  dispatcher.start();
  return { store, jobs, dispatcher };
}

async function stopInstance(instance: Instance): Promise<void> {
  await instance.dispatcher.stop();
  await instance.jobs.stop();
}

/** A tenant and a webhook on `orders` of its test environment, straight through the store. */
async function seed(store: Store, url: string): Promise<DataScope> {
  const scope = await seedTenantScope(store);
  await seedWebhookOn(store, scope, 'orders', url);
  return scope;
}

async function commitDoc(
  store: Store,
  scope: DataScope,
  fields: Record<string, number | string>,
): Promise<string> {
  const doc = firstVersion(fields);
  const result = await store.documents.commit(scope, 'orders', [putWrite(doc)]);
  if (!result.ok) throw new Error('commit conflicted');
  return doc._id;
}

const settle = () => new Promise((r) => setTimeout(r, 400));

interface Target {
  name: string;
  /** Two handles on one store: the same object (embedded, one process) or two connections (MongoDB). */
  open(): Promise<{ first: Store; second: Store; close(): Promise<void> }>;
}

const targets: Target[] = [
  {
    name: 'embedded',
    async open() {
      const store = await createTempEmbeddedStore();
      return { first: store, second: store, close: () => destroyTempEmbeddedStore(store) };
    },
  },
];
const mongo = await mongoConnection();
if (mongo) {
  targets.push({
    name: 'mongodb @mongodb',
    async open() {
      const first = createMongoStore({ uri: mongo.uri, dbPrefix: mongo.dbPrefix });
      const second = createMongoStore({ uri: mongo.uri, dbPrefix: mongo.dbPrefix });
      await first.init();
      await second.init();
      return {
        first,
        second,
        async close() {
          await first.close();
          await second.close();
          await dropDatabases(mongo.uri, mongo.dbPrefix);
        },
      };
    },
  });
}

for (const target of targets) {
  describe(`webhook dispatcher [${target.name}]`, function () {
    this.timeout(30_000);
    let receiver: Receiver;
    let stores: Awaited<ReturnType<Target['open']>>;
    beforeEach(async () => {
      receiver = await startReceiver();
      stores = await target.open();
    });
    afterEach(async () => {
      await stores.close();
      await receiver.close();
    });
    const docIds = () => receiver.requests.map((r) => r.body.documentId as string);

    it('delivers a replayed stretch of the feed once: delivery ids are per (event, webhook)', async () => {
      const store = stores.first;
      const scope = await seed(store, `${receiver.url}/replay`);
      // Tokens of the events, read beside the dispatcher.
      const { events: tokens, stop: stopFeed } = await collectFeed(store);
      const marker = await commitDoc(store, scope, { n: 0 });
      await until(() => tokens.length === 1, 'the marker event');

      const instance = await startInstance(store);
      await until(() => instance.dispatcher.leading, 'the lease');
      const ids = [await commitDoc(store, scope, { n: 1 }), await commitDoc(store, scope, { n: 2 })];
      await receiver.waitFor(2);
      await stopInstance(instance);

      // Rewind the saved position to the marker: the two events will be read again.
      expect(await store.consumers.acquire(DISPATCHER_NAME, 'rewinder', 60_000)).to.equal(true);
      expect(await store.consumers.savePosition(DISPATCHER_NAME, 'rewinder', tokens[0]!.token)).to.equal(
        true,
      );
      await store.consumers.release(DISPATCHER_NAME, 'rewinder');

      const again = await startInstance(store);
      const third = await commitDoc(store, scope, { n: 3 });
      await receiver.waitFor(3);
      await settle();
      await stopInstance(again);
      await stopFeed();
      expect(docIds().sort()).to.deep.equal([...ids, third].sort());
      expect(docIds()).to.not.include(marker);
      // First attempts that succeed write no job (the feed is the outbox), except the first
      // event read with no saved position (handed to Agenda, so its position could be saved at
      // once); the replayed events found their delivery records and sent nothing.
      const { total } = await store.agendaBackend().repository.queryJobs({ name: DELIVERY_JOB });
      expect(total).to.equal(1);
      expect(new Set(receiver.requests.map((r) => r.headers['x-service-delivery-id'])).size).to.equal(3);
    });

    it('saves the position of deliveries that finish after the last event, with no event after them', async () => {
      const store = stores.first;
      const scope = await seed(store, `${receiver.url}/late`);
      const instance = await startInstance(store);
      await until(() => instance.dispatcher.leading, 'the lease');
      const { events, stop: stopFeed } = await collectFeed(store);
      await commitDoc(store, scope, { n: 0 }); // the anchor: saved at once
      await receiver.waitFor(1);
      receiver.delayMs = 300;
      await commitDoc(store, scope, { n: 1 });
      await receiver.waitFor(2);
      await until(
        async () => (await store.consumers.position(DISPATCHER_NAME)) === events[1]?.token,
        'the last event saved',
        LEASE_MS * 3,
      );
      await stopInstance(instance);
      await stopFeed();
    });

    it('reads on once its open events finish when more are open than it keeps', async () => {
      const store = stores.first;
      const scope = await seed(store, `${receiver.url}/open`);
      const instance = await startInstance(store, undefined, { concurrency: 4, maxOpenEvents: 2 });
      await until(() => instance.dispatcher.leading, 'the lease');
      const ids = [await commitDoc(store, scope, { n: 0 })]; // the anchor (a job)
      await receiver.waitFor(1);
      // The next one is answered slowly; those after it finish first and pile up behind it.
      receiver.delayMs = 400;
      ids.push(await commitDoc(store, scope, { n: 1 }));
      await new Promise((r) => setTimeout(r, 100));
      receiver.delayMs = 0;
      for (let n = 2; n < 8; n++) ids.push(await commitDoc(store, scope, { n }));
      await receiver.waitFor(8);
      await stopInstance(instance);
      expect(docIds().sort()).to.deep.equal(ids.sort());
    });

    it('of two dispatchers one reads at a time; the other takes over when it stops; each event goes once', async () => {
      const scope = await seed(stores.first, `${receiver.url}/lease`);
      const a = await startInstance(stores.first);
      const b = await startInstance(stores.second);
      await until(() => a.dispatcher.leading || b.dispatcher.leading, 'a leader');
      await settle();
      expect(a.dispatcher.leading && b.dispatcher.leading).to.equal(false);
      const [leader, follower] = a.dispatcher.leading ? [a, b] : [b, a];
      const first = [
        await commitDoc(stores.first, scope, { n: 1 }),
        await commitDoc(stores.second, scope, { n: 2 }),
      ];
      await receiver.waitFor(2);

      await stopInstance(leader);
      await until(() => follower.dispatcher.leading, 'the take-over', LEASE_MS * 4);
      const later = await commitDoc(stores.first, scope, { n: 3 });
      await receiver.waitFor(3);
      await settle();
      await stopInstance(follower);
      expect(docIds().sort()).to.deep.equal([...first, later].sort());
    });
  });
}

describe('webhook dispatcher: history lost [embedded]', function () {
  this.timeout(20_000);

  it('logs loudly when its position left the retained history, and goes on from now', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'folio-lost-'));
    const receiver = await startReceiver();
    const store = await createTempEmbeddedStore(100);
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(line) });
    try {
      const scope = await seed(store, `${receiver.url}/lost`);
      const { events, stop: stopFeed } = await collectFeed(store);
      await commitDoc(store, scope, { n: 0 });
      await until(() => events.length === 1, 'the event');
      await stopFeed();
      await store.consumers.acquire(DISPATCHER_NAME, 'old', 60_000);
      await store.consumers.savePosition(DISPATCHER_NAME, 'old', events[0]!.token);
      await store.consumers.release(DISPATCHER_NAME, 'old');
      // Past retention, with a later event so that the old one is pruned.
      await new Promise((r) => setTimeout(r, 250));
      await commitDoc(store, scope, { n: 1 });
      await new Promise((r) => setTimeout(r, 250));

      const instance = await startInstance(store, logger);
      await until(() => lines.some((l) => l.includes('WEBHOOK EVENTS LOST')), 'the error line');
      const lost = JSON.parse(lines.find((l) => l.includes('WEBHOOK EVENTS LOST')) as string);
      expect(lost).to.include({ level: 50, reason: 'history_lost' });
      await until(() => instance.dispatcher.leading, 'reading from now');
      const now = await commitDoc(store, scope, { n: 2 });
      await receiver.waitFor(1);
      await settle();
      await stopInstance(instance);
      expect(receiver.requests.map((r) => r.body.documentId)).to.deep.equal([now]);
    } finally {
      await destroyTempEmbeddedStore(store);
      await receiver.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
