/**
 * The MongoDB change feed's fault paths through the real driver, against a scripted server
 * (test/support/mongoWire.ts): an event over 16 MB stepped over, the server's split fragments
 * joined, an error that cannot clear ending the subscriptions and marking the feed failed, the
 * bounded readiness wait, resumes served from the ring or by a limited catch-up stream,
 * checkpoints on a quiet collection, and the bounded pool check-out.
 */
import { expect } from 'chai';
import { type Document, MongoClient, Timestamp } from 'mongodb';
import { MongoChangeFeed } from '../../src/store/mongodb/changes/changes.js';
import { ClusterClock } from '../../src/store/mongodb/changes/clusterClock.js';
import { PROBE_ATTEMPTS } from '../../src/store/mongodb/changes/reopeningStream.js';
import { DEFAULT_FEED_LIMITS, type FeedLimits } from '../../src/store/mongodb/database/limits.js';
import { isPoolWaitTimeout, unavailability } from '../../src/store/mongodb/database/serverErrors.js';
import {
  conflictingIndexName,
  failedWriteDocument,
  sameKeyFilter,
} from '../../src/store/mongodb/indexes/declaredIndexes.js';
import { projectDbName } from '../../src/store/mongodb/layout/naming.js';
import type { ChangeEvent, ChangeSubscription, DataScope } from '../../src/store/port.js';
import {
  answerChangeStream,
  eventToken,
  highWaterMark,
  idleReply,
  oplogInsert,
} from '../support/changeStreamScript.js';
import {
  cursorReply,
  errorReply,
  type Handler,
  startWireServer,
  type WireServer,
} from '../support/mongoWire.js';

const scope: DataScope = { projectId: `prj_01HX${'0'.repeat(22)}`, env: 'live' };
const db = projectDbName('folio', scope);
/** The token of the event at cluster time (1000 + n, 1), as the server writes it. */
const T = (n: number) => eventToken(1000 + n);
/** The server refusing a getMore: the user lost a privilege (or its credentials rotate). */
const unauthorized = () =>
  errorReply(13, 'Unauthorized', 'not authorized on admin to execute command { getMore: ... }');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An insert into `coll` at cluster time (1000 + n, 1), token `T(n)`. */
function insert(n: number, id: string, coll = 'notes'): Document {
  return oplogInsert(db, coll, id, 1000 + n).change;
}

/** The first `n` events of a subscription, or what came before it ended or `ms` passed. */
async function take(sub: ChangeSubscription, n: number, ms = 5_000): Promise<ChangeEvent[]> {
  const got: ChangeEvent[] = [];
  const deadline = Date.now() + ms;
  while (got.length < n && Date.now() < deadline && sub.endedBy === null) {
    const event = sub.take();
    if (event) got.push(event);
    else await sleep(10);
  }
  return got;
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(10);
  }
}

interface Rig {
  server: WireServer;
  client: MongoClient;
  feed: MongoChangeFeed;
  warnings: string[];
  aggregates(): Document[];
}

const rigs: Rig[] = [];

async function rig(handler: Handler, limits: Partial<FeedLimits> = {}): Promise<Rig> {
  const server = await startWireServer(handler);
  const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2_000 });
  const warnings: string[] = [];
  const feed = new MongoChangeFeed(
    client,
    'folio',
    new ClusterClock(),
    (message) => warnings.push(message),
    () => {},
    { ...DEFAULT_FEED_LIMITS, ...limits },
  );
  const made: Rig = {
    server,
    client,
    feed,
    warnings,
    aggregates: () => server.commands.filter((c) => 'aggregate' in c),
  };
  rigs.push(made);
  return made;
}

/** getMore on an idle cursor: an empty batch after a pause (a real server waits maxAwaitTimeMS). */
async function idle(cursorId: number, token: string): Promise<Document> {
  await sleep(30);
  return cursorReply(cursorId, [], token, false);
}

const changeStreamOf = (command: Document) => (command.pipeline as Document[])[0]!.$changeStream as Document;
/** The shared stream's aggregate (the whole deployment), not a catch-up narrowed to a collection. */
const isShared = (command: Document) =>
  typeof (command.pipeline as Document[])[1]?.$match?.['ns.db'] === 'object';

describe('MongoDB change feed through the real driver (scripted server)', function () {
  this.timeout(15_000);

  afterEach(async () => {
    for (const r of rigs.splice(0)) {
      await r.feed.close();
      await r.client.close();
      await r.server.close();
    }
  });

  it('steps over an event over 16 MB: logs it, counts it, and the feed goes on after it', async () => {
    const tooLarge = () =>
      errorReply(
        10334,
        'BSONObjectTooLarge',
        'BSONObj size: 17825792 (0x1100000) is invalid. Size must be between 0 and 16793600(16MB)',
      );
    let mainGetMores = 0;
    const r = await rig(async (command, name) => {
      if (name === 'aggregate') {
        const stages = command.pipeline as Document[];
        const after = changeStreamOf(command).startAfter?._data as string | undefined;
        if ('$project' in stages.at(-1)!) {
          // The probe: the next event with its large fields left out.
          const big = { _id: { _data: T(4) }, operationType: 'update', ns: { db, coll: 'notes' } };
          return cursorReply(900, [{ ...big, documentKey: { _id: 'big' } }], T(4), true);
        }
        // Closing in, one event per batch: the ordinary event the failed batch held comes first.
        if (after === T(2)) return cursorReply(150, [insert(3, 'a2')], T(3), true);
        if (after === T(4)) return cursorReply(200, [insert(5, 'b')], T(5), true);
        return cursorReply(100, [], T(1), true);
      }
      if (name === 'getMore') {
        const id = Number(command.getMore);
        if (id === 100) {
          mainGetMores += 1;
          // The second batch would hold a2 and the oversized event: the whole getMore fails.
          return mainGetMores === 1 ? cursorReply(100, [insert(2, 'a')], T(2), false) : tooLarge();
        }
        if (id === 150) return tooLarge();
        return idle(id, T(5));
      }
      return undefined;
    });
    const sub = r.feed.watch(scope, 'notes');
    await sub.ready;
    const events = await take(sub, 3);
    // Every ordinary event arrives; only the oversized one is missing.
    expect(events.map((e) => e.documentId)).to.deep.equal(['a', 'a2', 'b']);
    expect(sub.endedBy).to.equal(null);
    expect(r.feed.stats.skippedEvents).to.equal(1);
    expect(r.feed.failure).to.equal(null);
    expect(r.warnings.filter((w) => w.includes('skipped'))).to.have.length(1);
    expect(r.warnings.find((w) => w.includes('skipped')))
      .to.include(`${db}.notes`)
      .and.include('big');
    const aggregates = r.aggregates();
    // After the first failure: reopened where the last good batch ended, one event per batch.
    const closingIn = aggregates.find((c) => changeStreamOf(c).startAfter?._data === T(2))!;
    expect((closingIn.cursor as Document).batchSize).to.equal(1);
    // The probe starts right before the oversized event and asks for no images.
    const probe = aggregates.find((c) => '$project' in (c.pipeline as Document[]).at(-1)!)!;
    expect(changeStreamOf(probe).startAfter._data).to.equal(T(3));
    expect(changeStreamOf(probe).fullDocument).to.equal(undefined);
    // Then the stream goes on after it, in full batches again.
    const last = aggregates.at(-1)!;
    expect(changeStreamOf(last).startAfter._data).to.equal(T(4));
    expect((last.cursor as Document).batchSize).to.equal(undefined);
  });

  it('closing in on an oversized event that is no longer there: back to full batches, nothing skipped', async () => {
    let failed = false;
    const r = await rig(async (command, name) => {
      if (name === 'aggregate') {
        const after = changeStreamOf(command).startAfter?._data as string | undefined;
        if (after === T(2)) return cursorReply(150, [insert(3, 'a2')], T(3), true);
        if (after === T(3)) return cursorReply(300, [], T(3), true);
        return cursorReply(100, [insert(2, 'a')], T(2), true);
      }
      if (name === 'getMore') {
        const id = Number(command.getMore);
        if (id === 100 && !failed) {
          failed = true;
          return errorReply(10334, 'BSONObjectTooLarge', 'BSONObj size is invalid');
        }
        // Caught up, one event per batch, without meeting the failure again.
        return idle(id, T(3));
      }
      return undefined;
    });
    const sub = r.feed.watch(scope, 'notes');
    expect((await take(sub, 2)).map((e) => e.documentId)).to.deep.equal(['a', 'a2']);
    await until(() => r.aggregates().some((c) => changeStreamOf(c).startAfter?._data === T(3)));
    const last = r.aggregates().at(-1)!;
    expect((last.cursor as Document).batchSize).to.equal(undefined);
    expect(r.feed.stats.skippedEvents).to.equal(0);
  });

  it('steps over an event only it fails on (the probe reads it): logged, the other feeds go on', async () => {
    // An error of this one event (say a field too large to split): every read that would carry
    // it fails, the probe without its images reads it.
    const failsOnIt = () => errorReply(40_000, 'Location40000', 'cannot send this event');
    const r = await rig(async (command, name) => {
      if (name === 'aggregate') {
        const after = changeStreamOf(command).startAfter?._data as string | undefined;
        if ('$project' in (command.pipeline as Document[]).at(-1)!) {
          const bad = { _id: { _data: T(3) }, operationType: 'update', ns: { db, coll: 'notes' } };
          return cursorReply(900, [{ ...bad, documentKey: { _id: 'bad' } }], T(3), true);
        }
        if (after === T(2)) return failsOnIt();
        if (after === T(3)) return cursorReply(200, [insert(4, 'b')], T(4), true);
        return cursorReply(100, [insert(2, 'a')], T(2), true);
      }
      if (name === 'getMore') {
        const id = Number(command.getMore);
        return id === 100 ? failsOnIt() : idle(id, T(4));
      }
      return undefined;
    });
    const all = r.feed.watchAll();
    expect((await take(all, 2)).map((e) => e.documentId)).to.deep.equal(['a', 'b']);
    expect(all.endedBy).to.equal(null);
    expect(r.feed.failure).to.equal(null);
    expect(r.feed.stats.skippedEvents).to.equal(1);
    const warning = r.warnings.find((w) => w.includes('skipped'));
    expect(warning).to.include('bad').and.include('cannot send this event');
  });

  it('an oversized event the probe cannot read ends the stream after a bounded number of probes', async () => {
    const r = await rig(async (command, name) => {
      if (name === 'aggregate') {
        if ('$project' in (command.pipeline as Document[]).at(-1)!) {
          return errorReply(2, 'BadValue', 'the probe fails too');
        }
        return changeStreamOf(command).startAfter
          ? errorReply(10334, 'BSONObjectTooLarge', 'BSONObj size is invalid')
          : cursorReply(100, [insert(2, 'a')], T(2), true);
      }
      if (name === 'getMore') return errorReply(10334, 'BSONObjectTooLarge', 'BSONObj size is invalid');
      return undefined;
    });
    const sub = r.feed.watch(scope, 'notes');
    await until(() => sub.endedBy !== null, 8_000);
    expect(sub.endedBy).to.equal('unavailable');
    expect(r.feed.failure).to.include('could not be stepped over');
    const probes = r.aggregates().filter((c) => '$project' in (c.pipeline as Document[]).at(-1)!);
    expect(probes).to.have.length(PROBE_ATTEMPTS);
  });

  it('an error in publishing a change is a failure of the feed, not lost history', async () => {
    let sent = false;
    const r = await rig(async (_command, name) => {
      if (name === 'aggregate') return cursorReply(100, [], T(1), true);
      if (name === 'getMore') {
        if (sent) return idle(100, T(3));
        sent = true;
        // A change the feed cannot map: its token is not the string every MongoDB 6.0+ sends.
        return cursorReply(100, [{ ...insert(2, 'odd'), _id: { _data: 42 } }], T(2), false);
      }
      return undefined;
    });
    const all = r.feed.watchAll();
    await until(() => all.endedBy !== null);
    expect(all.endedBy).to.equal('unavailable');
    expect(r.feed.failure).to.include('without a string resume token');
  });

  it('joins an event the server split, when the server can split', async () => {
    const fragment = (n: number, k: number, of: number, fields: Document) => ({
      _id: { _data: T(n) },
      splitEvent: { fragment: k, of },
      ...fields,
    });
    const big = insert(3, 'big');
    const r = await rig((_command, name) => {
      if (name === 'aggregate') {
        return cursorReply(
          100,
          [
            fragment(2, 1, 2, {
              operationType: 'insert',
              ns: big.ns,
              documentKey: big.documentKey,
              clusterTime: big.clusterTime,
            }),
            fragment(3, 2, 2, { fullDocument: big.fullDocument }),
          ],
          T(3),
          true,
        );
      }
      if (name === 'getMore') return idle(100, T(3));
      return undefined;
    });
    r.feed.configure({ splitLargeEvents: true });
    const sub = r.feed.watch(scope, 'notes');
    const [event] = await take(sub, 1);
    expect(event?.documentId).to.equal('big');
    expect(event?.token).to.equal(T(3));
    expect(event?.document).to.include({ title: 'note big' });
    expect(r.feed.stats.joinedEvents).to.equal(1);
    expect((r.aggregates()[0]!.pipeline as Document[]).at(-1)).to.deep.equal({
      $changeStreamSplitLargeEvent: {},
    });
  });

  it('an error that cannot clear ends every subscription "unavailable" and marks the feed failed, until it reads again', async () => {
    let refuse = true;
    const r = await rig(
      async (_command, name) => {
        if (name === 'aggregate') return cursorReply(100, [], T(1), true);
        if (name === 'getMore') {
          if (refuse) return unauthorized();
          return idle(100, T(2));
        }
        return undefined;
      },
      { streamReadyTimeoutMs: 300 },
    );
    const one = r.feed.watch(scope, 'notes');
    const all = r.feed.watchAll();
    await until(() => one.endedBy !== null && all.endedBy !== null);
    expect([one.endedBy, all.endedBy]).to.deep.equal(['unavailable', 'unavailable']);
    expect(r.feed.failure).to.include('not authorized');
    expect(r.feed.stats.sourceFailures).to.equal(1);
    expect(r.warnings.some((w) => w.startsWith('ERROR: the change feed stopped'))).to.equal(true);
    const aggregatesAfterFailure = r.aggregates().length;
    // Within the pause after a failure, a new subscription waits at most streamReadyTimeoutMs.
    refuse = false;
    const waiting = r.feed.watch(scope, 'notes');
    await waiting.ready;
    expect(waiting.endedBy).to.equal('unavailable');
    expect(r.feed.stats.readyTimeouts).to.equal(1);
    expect(r.aggregates().length, 'no reopen within the pause').to.equal(aggregatesAfterFailure);
    // After the pause (1 s), the stream opens again, reads, and the feed is ready.
    await sleep(1_000);
    const again = r.feed.watch(scope, 'notes');
    await again.ready;
    expect(again.endedBy).to.equal(null);
    await until(() => r.feed.failure === null);
  });

  it('a failed feed tries again by itself: readiness comes back with nothing subscribed (a standby instance)', async () => {
    let refusals = 0;
    const r = await rig(async (_command, name) => {
      if (name === 'aggregate') return cursorReply(100, [], T(1), true);
      if (name === 'getMore') {
        // One brief Unauthorized (a credential rotation), then the server accepts again.
        if (refusals === 0) {
          refusals += 1;
          return unauthorized();
        }
        return idle(100, T(2));
      }
      return undefined;
    });
    const sub = r.feed.watch(scope, 'notes');
    await until(() => sub.endedBy !== null);
    expect(r.feed.failure).to.include('not authorized');
    const aggregatesAfterFailure = r.aggregates().length;
    // Nobody subscribes again; after the 1 s pause the feed opens a stream itself and reads.
    await until(() => r.feed.failure === null, 4_000);
    expect(r.feed.sourceCount).to.equal(0);
    expect(r.aggregates().length).to.be.greaterThan(aggregatesAfterFailure);
    expect(r.warnings.some((w) => w.includes('reads again'))).to.equal(true);
    // The stream it opened only to check is closed again.
    await until(() => r.server.commands.some((c) => 'killCursors' in c));
  });

  it('serves resumes the ring covers without a stream of their own; older ones by at most maxCatchUpStreams', async () => {
    let releaseCatchUp: (() => void) | null = null;
    const shared = { sent: false };
    const r = await rig(
      async (command, name) => {
        if (name === 'aggregate') {
          if (isShared(command)) return cursorReply(100, [], T(1), true);
          // A catch-up stream from before the ring: held until the test lets it answer.
          await new Promise<void>((resolve) => {
            releaseCatchUp = resolve;
          });
          return cursorReply(300, [insert(2, 'a'), insert(4, 'c')], T(5), true);
        }
        if (name === 'getMore') {
          const id = Number(command.getMore);
          if (id === 100 && !shared.sent) {
            shared.sent = true;
            return cursorReply(100, [insert(2, 'a'), insert(3, 'b', 'other'), insert(4, 'c')], T(5), false);
          }
          return idle(id, T(5));
        }
        return undefined;
      },
      { maxCatchUpStreams: 1, catchUpWaitMs: 100 },
    );
    const live = r.feed.watch(scope, 'notes');
    expect((await take(live, 2)).map((e) => e.documentId)).to.deep.equal(['a', 'c']);
    await until(() => r.feed.ring.coveredTo === T(5));
    const before = r.aggregates().length;

    const resumed = r.feed.watch(scope, 'notes', { after: T(2) });
    await resumed.ready;
    expect((await take(resumed, 1)).map((e) => e.documentId)).to.deep.equal(['c']);
    expect(r.aggregates().length, 'no stream opened for a resume in the ring').to.equal(before);
    expect(r.feed.stats.ringResumes).to.equal(1);

    // Older than the ring: one catch-up stream; a second one waits catchUpWaitMs, then is refused.
    const old = r.feed.watch(scope, 'notes', { after: T(0) });
    await until(() => r.aggregates().length === before + 1);
    const refused = r.feed.watch(scope, 'notes', { after: T(0) });
    await refused.ready;
    expect(refused.endedBy).to.equal('unavailable');
    expect(r.feed.stats.catchUpRefused).to.equal(1);
    expect(r.aggregates().length).to.equal(before + 1);
    releaseCatchUp!();
    await old.ready;
    expect(old.endedBy).to.equal(null);
    expect((await take(old, 2)).map((e) => e.documentId)).to.deep.equal(['a', 'c']);
    expect(r.feed.stats.catchUpResumes).to.equal(2);
  });

  it('a fresh instance resumes a quiet collection from another collection’s token: from its cluster time, no history_lost, nothing twice', async () => {
    // A busy deployment: the client's checkpoint is the last event the old instance's shared
    // stream read, of another collection, in the middle of a transaction at t=1005.
    const oplog = [
      oplogInsert(db, 'busy', 'b0', 1000),
      oplogInsert(db, 'quiet', 'q-before', 1005, 0),
      oplogInsert(db, 'busy', 'b1', 1005, 1),
      oplogInsert(db, 'quiet', 'q-after', 1005, 2),
      oplogInsert(db, 'busy', 'b2', 1006),
      oplogInsert(db, 'quiet', 'q-later', 1007),
    ];
    const checkpoint = oplog[2]!.token;
    const end = highWaterMark(1008);
    let cursors = 0;
    const r = await rig(async (command, name) => {
      if (name === 'aggregate') return answerChangeStream(command, oplog, ++cursors * 100);
      if (name === 'getMore') return idleReply(Number(command.getMore), end);
      return undefined;
    });
    // The server refuses that token to a stream narrowed to `quiet`, as MongoDB does.
    const refused = answerChangeStream(
      {
        pipeline: [
          { $changeStream: { startAfter: { _data: checkpoint } } },
          { $match: { 'ns.coll': 'quiet' } },
        ],
      },
      oplog,
      1,
    );
    expect(refused.code).to.equal(280);

    const sub = r.feed.watch(scope, 'quiet', { after: checkpoint });
    const events = await take(sub, 2);
    expect(sub.endedBy).to.equal(null);
    expect(events.map((e) => e.documentId)).to.deep.equal(['q-after', 'q-later']);
    const catchUp = r.aggregates().find((c) => !isShared(c))!;
    expect(changeStreamOf(catchUp).startAfter).to.equal(undefined);
    expect(changeStreamOf(catchUp).startAtOperationTime.equals(new Timestamp({ t: 1005, i: 1 }))).to.equal(
      true,
    );
    expect(r.feed.stats.catchUpResumes).to.equal(1);
    await until(() => r.feed.catchUpCount === 0);
  });

  it('a quiet collection’s subscription gets the shared stream’s post-batch token as checkpoint, and resumes from it', async () => {
    let position = 1;
    const r = await rig((_command, name) => {
      if (name === 'aggregate') return cursorReply(100, [], T(position), true);
      if (name === 'getMore') {
        // Other collections are busy: the post-batch token moves on.
        position += 1;
        return idle(100, T(position));
      }
      return undefined;
    });
    const quiet = r.feed.watch(scope, 'quiet');
    await quiet.ready;
    const first = quiet.checkpoint?.() ?? null;
    await until(() => {
      const now = quiet.checkpoint?.() ?? null;
      return now !== null && first !== null && now > first;
    });
    // Resuming from a checkpoint is a ring hit: nothing lost, no stream opened.
    const cp = quiet.checkpoint!()!;
    const before = r.aggregates().length;
    const resumed = r.feed.watch(scope, 'quiet', { after: cp });
    await resumed.ready;
    expect(resumed.endedBy).to.equal(null);
    expect(r.aggregates().length).to.equal(before);
  });

  it('bounds a pool check-out: past waitQueueTimeoutMS an operation fails as 503 store_unavailable', async () => {
    const server = await startWireServer(async (_command, name) => {
      if (name === 'slow') {
        await sleep(1_000);
        return { ok: 1 };
      }
      return undefined;
    });
    const client = new MongoClient(server.uri, { maxPoolSize: 1, waitQueueTimeoutMS: 100 });
    try {
      const holding = client.db('admin').command({ slow: 1 });
      await sleep(50);
      const error = await client
        .db('admin')
        .command({ slow: 1 })
        .catch((e: unknown) => e);
      expect(isPoolWaitTimeout(error)).to.equal(true);
      expect(unavailability(error, 1_000)?.reason).to.equal('store_unavailable');
      await holding;
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('a unique-index conflict of a bulk write names the index and finds the values the failed write carried', async () => {
    // The server's reply to a replacement that hit a declared unique index, as MongoDB sends it.
    const server = await startWireServer((_command, name) => {
      if (name !== 'update' && name !== 'insert') return undefined;
      return {
        ok: 1,
        n: 0,
        nModified: 0,
        writeErrors: [
          {
            index: 0,
            code: 11000,
            errmsg:
              'E11000 duplicate key error collection: folio_x.people index: email_unique dup key: { email: "a@b.example", "address.city": "Oslo" }',
            keyPattern: { email: 1, 'address.city': 1 },
            keyValue: { email: 'a@b.example', 'address.city': 'Oslo' },
          },
        ],
      };
    });
    const client = new MongoClient(server.uri);
    try {
      const people = client.db('folio_x').collection<{ _id: string } & Document>('people');
      const doc = { _id: 'p2', email: 'a@b.example', address: { city: 'Oslo' }, _folio: { version: 2 } };
      const error = await people
        .bulkWrite([{ replaceOne: { filter: { _id: 'p2' }, replacement: doc } }], { ordered: true })
        .catch((e: unknown) => e);
      expect((error as Error).name).to.equal('MongoBulkWriteError');
      // What the review found: the driver's error carries no keyValue to read.
      expect((error as { keyValue?: unknown }).keyValue).to.equal(undefined);
      expect(conflictingIndexName(error)).to.equal('email_unique');
      const written = failedWriteDocument(error);
      expect(written).to.deep.equal(doc);
      expect(sameKeyFilter(['email', 'address.city'], written!)).to.deep.equal({
        email: 'a@b.example',
        'address.city': 'Oslo',
      });
      // An insert's batch entry is the document itself.
      const inserted = await people
        .bulkWrite([{ insertOne: { document: { _id: 'p3', email: 'a@b.example' } } }])
        .catch((e: unknown) => e);
      expect(failedWriteDocument(inserted)).to.deep.equal({ _id: 'p3', email: 'a@b.example' });
      // A document without one of the fields is not constrained by the (partial) unique index.
      expect(sameKeyFilter(['email', 'address.city'], { _id: 'p4', email: 'x' })).to.equal(null);
      expect(sameKeyFilter(['constructor'], { _id: 'p5' })).to.equal(null);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('deletes without a pre-image: skipped with one warning a minute and a count, not a warning each', async () => {
    const deletes = Array.from({ length: 5 }, (_, i) => ({
      _id: { _data: T(10 + i) },
      operationType: 'delete',
      clusterTime: new Timestamp({ t: 2000 + i, i: 1 }),
      ns: { db, coll: 'notes' },
      documentKey: { _id: `gone${i}` },
    }));
    let sent = false;
    const r = await rig((_command, name) => {
      if (name === 'aggregate') return cursorReply(100, [], T(9), true);
      if (name === 'getMore') {
        if (sent) return idle(100, T(20));
        sent = true;
        return cursorReply(100, [...deletes, insert(20, 'kept')], T(20), false);
      }
      return undefined;
    });
    const sub = r.feed.watch(scope, 'notes');
    expect((await take(sub, 1)).map((e) => e.documentId)).to.deep.equal(['kept']);
    expect(r.feed.stats.eventsWithoutImage).to.equal(5);
    expect(r.warnings.filter((w) => w.includes('without its document image'))).to.have.length(1);
  });
});
