/**
 * The webhook dispatcher on a quiet Folio of a busy MongoDB deployment, through the real driver
 * against the scripted server (test/support/mongoWire.ts): no Folio event for a long time, empty
 * getMore batches whose post-batch token moves on with the other databases' writes. The saved
 * position must move on with them, or a hand-over after the oplog window finds it gone and the
 * dispatcher goes on from now, losing what was committed meanwhile. The dispatcher runs on a
 * real embedded store whose change feed is the real MongoDB feed on the scripted server.
 */
import { tmpdir } from 'node:os';
import { expect } from 'chai';
import { type Document, MongoClient } from 'mongodb';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { JobRunner } from '../../src/jobs/jobRunner.js';
import { createServices } from '../../src/services/index.js';
import { WebhookDispatcher } from '../../src/services/webhooks/dispatcher.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { MongoChangeFeed } from '../../src/store/mongodb/changes/changes.js';
import { ClusterClock } from '../../src/store/mongodb/changes/clusterClock.js';
import type { Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { highWaterMark, idleReply } from '../support/changeStreamScript.js';
import { cursorReply, startWireServer, type WireServer } from '../support/mongoWire.js';

const LEASE_MS = 300;

async function until(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('webhook dispatcher on a quiet Folio of a busy MongoDB deployment (scripted server)', function () {
  this.timeout(15_000);
  let server: WireServer;
  let client: MongoClient;
  let feed: MongoChangeFeed;
  let embedded: EmbeddedStore;
  let jobs: JobRunner;
  let dispatcher: WebhookDispatcher;

  afterEach(async () => {
    await dispatcher?.stop();
    await jobs?.stop();
    await feed?.close();
    await client?.close();
    await server?.close();
    if (embedded) await destroyTempEmbeddedStore(embedded);
  });

  it('saves the feed’s post-batch position while no event comes, so it keeps up with the oplog', async () => {
    let clusterSeconds = 2_000;
    server = await startWireServer(async (_command: Document, name: string) => {
      if (name === 'aggregate') return cursorReply(100, [], highWaterMark(clusterSeconds), true);
      // Other databases are busy: every empty batch ends further on.
      if (name === 'getMore') return idleReply(100, highWaterMark(++clusterSeconds));
      return undefined;
    });
    client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2_000 });
    feed = new MongoChangeFeed(client, 'folio', new ClusterClock(), () => {});
    embedded = await createTempEmbeddedStore();
    const mongoFeed = feed;
    // The embedded store's repositories, with the MongoDB change feed as its feed.
    const store = new Proxy(embedded, {
      get: (target, property) => {
        if (property === 'changes') return mongoFeed;
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as Store;
    const logger = pino({ level: 'silent' });
    const config = loadConfig({}, [{ dataDir: tmpdir() }]);
    const services = createServices(store, config, logger);
    jobs = new JobRunner(
      store,
      { pollMs: 40, concurrency: 1, attemptTimeoutMs: 2000, errorRetryMs: 200, keepFinishedMs: 60_000 },
      logger,
    );
    dispatcher = new WebhookDispatcher(
      store,
      services.deliveries,
      jobs,
      { leaseMs: LEASE_MS, saveEveryMs: 0, concurrency: 1 },
      logger,
    );
    dispatcher.start();

    const saved = () => embedded.consumers.position(dispatcher.name);
    await until(async () => (await saved()) !== null);
    const first = (await saved())!;
    await until(async () => ((await saved()) ?? '') > first);
    // What it saved is a position the feed resumes from.
    const resumed = feed.watchAll({ after: (await saved())! });
    await resumed.ready;
    expect(resumed.endedBy).to.equal(null);
    resumed.close();
  });
});
