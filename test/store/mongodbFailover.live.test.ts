/**
 * The change source through what a real deployment does to it (`@mongodb`; skipped with the one
 * SKIPPED line when there is no MongoDB): an election while a stream is open and writes go on,
 * and a resume token older than the deployment's oplog (the server's own code 286). Each test
 * starts replica sets of its own with mongodb-memory-server, and skips when it cannot.
 */
import { expect } from 'chai';
import { MongoClient } from 'mongodb';
import { newId } from '../../src/ids.js';
import {
  type MemoryReplicaSet,
  startMemoryReplicaSet,
} from '../../src/store/mongodb/database/memoryServer.js';
import { createMongoStore, type MongoStore } from '../../src/store/mongodb/index.js';
import type { ChangeEvent, ChangeSubscription, DataScope } from '../../src/store/port.js';
import { mongoTestTarget, uniqueDbPrefix } from '../support/mongodb.js';
import { withTimeout } from '../support/timeout.js';
import { firstVersion, putWrite } from './fixtures.js';

const target = await mongoTestTarget();
const scope = (): DataScope => ({ projectId: newId('prj'), env: 'live' });

async function replicaSet(members: number): Promise<MemoryReplicaSet | null> {
  try {
    return await withTimeout(startMemoryReplicaSet({ members }), 120_000, `a ${members}-member replica set`);
  } catch {
    return null;
  }
}

async function openStore(uri: string): Promise<MongoStore> {
  const store = createMongoStore({
    uri,
    dbPrefix: uniqueDbPrefix(),
    clientOptions: { serverSelectionTimeoutMS: 30_000 },
  });
  await store.init();
  return store;
}

/** Events of `sub` until `done` says so or `ms` pass. */
async function collect(
  sub: ChangeSubscription,
  done: (events: ChangeEvent[]) => boolean,
  ms: number,
): Promise<ChangeEvent[]> {
  const events: ChangeEvent[] = [];
  const iterator = sub[Symbol.asyncIterator]();
  const deadline = Date.now() + ms;
  while (!done(events) && Date.now() < deadline) {
    const next = await Promise.race([
      iterator.next(),
      new Promise<null>((resolve) => setTimeout(() => resolve(null), deadline - Date.now())),
    ]);
    if (next === null || next.done) break;
    events.push(next.value);
  }
  return events;
}

if (target) {
  describe('MongoDB change source through elections and lost history @mongodb', function () {
    this.timeout(240_000);

    it('loses and duplicates no event when the primary steps down while a stream is open and writes go on', async function () {
      const set = await replicaSet(3);
      if (!set) this.skip();
      const store = await openStore(set.uri);
      try {
        const where = scope();
        const sub = store.changes.watch(where, 'failover');
        await sub.ready;
        const acknowledged: string[] = [];
        for (let n = 0; n < 60; n++) {
          if (n === 20) {
            const admin = new MongoClient(set.uri);
            try {
              // The primary closes its connections as it steps down; that error is expected.
              await admin.db('admin').command({ replSetStepDown: 30, secondaryCatchUpPeriodSecs: 10 });
            } catch {}
            await admin.close();
          }
          const doc = firstVersion({ n });
          // Retried until acknowledged; a retry that finds the document there means the first
          // attempt was applied though unconfirmed, which counts as acknowledged too.
          for (let attempt = 0; ; attempt++) {
            try {
              const result = await store.documents.commit(where, 'failover', [putWrite(doc)]);
              if (result.ok || result.conflicts[0]?.currentVersion === 1) break;
              throw new Error(`unexpected conflict ${JSON.stringify(result)}`);
            } catch (error) {
              if (attempt > 60) throw error;
              await new Promise((resolve) => setTimeout(resolve, 500));
            }
          }
          acknowledged.push(doc._id);
        }
        const events = await collect(sub, (seen) => seen.length >= acknowledged.length, 90_000);
        const ids = events.map((e) => e.documentId);
        expect(new Set(ids).size, 'no event delivered twice').to.equal(ids.length);
        expect(ids, 'every acknowledged write, in commit order').to.deep.equal(acknowledged);
        expect(sub.endedBy).to.equal(null);
        sub.close();
      } finally {
        await store.close();
        await set.stop();
      }
    });

    it('ends a subscription with history_lost for a token older than the oplog (code 286)', async function () {
      const older = await replicaSet(1);
      if (!older) this.skip();
      let token: string;
      const first = await openStore(older.uri);
      try {
        const where = scope();
        const sub = first.changes.watch(where, 'history');
        await sub.ready;
        await first.documents.commit(where, 'history', [putWrite(firstVersion({ n: 1 }))]);
        const [event] = await collect(sub, (seen) => seen.length > 0, 30_000);
        expect(event).to.not.equal(undefined);
        token = event!.token;
        sub.close();
      } finally {
        await first.close();
        await older.stop();
      }
      // A deployment started later has no oplog entry as old as that token.
      const newer = await replicaSet(1);
      if (!newer) this.skip();
      const second = await openStore(newer.uri);
      try {
        const where = scope();
        await second.documents.commit(where, 'history', [putWrite(firstVersion({ n: 2 }))]);
        const resumed = second.changes.watch(where, 'history', { after: token });
        await resumed.ready;
        const events = await collect(resumed, () => false, 10_000);
        expect(events).to.deep.equal([]);
        expect(resumed.endedBy).to.equal('history_lost');
      } finally {
        await second.close();
        await newer.stop();
      }
    });
  });
}
