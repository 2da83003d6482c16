/** The embedded change feed: retention, history_lost boundaries, restart, source count. */
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import type { ChangeEvent, ChangeSubscription, DataScope, FolioDocument } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { firstVersion, putWrite } from './fixtures.js';

const scope: DataScope = { projectId: 'prj_feed', env: 'live' };

async function create(store: EmbeddedStore, collection = 'things'): Promise<FolioDocument> {
  const now = isoNow();
  const document: FolioDocument = { _id: newId('doc'), $createdAt: now, $updatedAt: now, $version: 1 };
  const result = await store.documents.commit(scope, collection, [
    { kind: 'put', expectedVersion: 0, document, operation: 'create', apiKeyHint: 'h', keepVersions: 5 },
  ]);
  expect(result).to.deep.equal({ ok: true });
  return document;
}

/** Everything the subscription yields until it is closed after `settleMs` (or ends itself). */
async function drain(sub: ChangeSubscription, settleMs = 20): Promise<ChangeEvent[]> {
  const timer = setTimeout(() => sub.close(), settleMs);
  const events: ChangeEvent[] = [];
  for await (const event of sub) events.push(event);
  clearTimeout(timer);
  return events;
}

/**
 * `work` with a second connection to the store's file. Operator commands open the store without
 * the server's lock, as this second connection does.
 */
async function withOtherConnection(store: EmbeddedStore, work: (other: EmbeddedStore) => Promise<void>) {
  const dataDir = store.file.replace(/[/\\]folio\.db$/, '');
  const other = createEmbeddedStore({ dataDir, eventRetentionMs: 300_000, lock: false });
  await other.init();
  try {
    await work(other);
  } finally {
    await other.close();
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('embedded change feed', () => {
  let store: EmbeddedStore;

  afterEach(async () => {
    if (store) await destroyTempEmbeddedStore(store);
  });

  it('uses the change-log sequence number as the token', async () => {
    store = await createTempEmbeddedStore();
    const sub = store.changes.watch(scope, 'things');
    await create(store);
    await create(store);
    expect((await drain(sub)).map((e) => e.token)).to.deep.equal(['1', '2']);
  });

  it('delivers what was committed even if the writer mutates its object afterwards', async () => {
    store = await createTempEmbeddedStore();
    const sub = store.changes.watch(scope, 'things');
    const document = await create(store);
    document.name = 'changed later';
    const [event] = await drain(sub);
    expect(event!.document).not.to.have.property('name');
  });

  it('ends at once with history_lost when events after the token were pruned, and only then', async () => {
    store = await createTempEmbeddedStore();
    const docs = [await create(store), await create(store), await create(store)];
    // Prune the oldest event (seq 1) as the retention sweep would.
    store.db.exec('DELETE FROM changes WHERE seq <= 1');
    const lost = store.changes.watch(scope, 'things', { after: '0' });
    expect(lost.endedBy).to.equal('history_lost');
    expect(await drain(lost)).to.deep.equal([]);
    // After seq 1 nothing is missing: seq 2 and 3 replay.
    const kept = store.changes.watch(scope, 'things', { after: '1' });
    expect((await drain(kept)).map((e) => e.documentId)).to.deep.equal([docs[1]!._id, docs[2]!._id]);
    expect(kept.endedBy).to.equal(null);
  });

  it('ends with invalid_token for a malformed token or one this database never issued', async () => {
    store = await createTempEmbeddedStore();
    await create(store);
    for (const after of ['abc', '-1', '1.5', '01', '', '2', '99999999999999999999']) {
      expect(store.changes.watch(scope, 'things', { after }).endedBy, after).to.equal('invalid_token');
      expect(store.changes.watchAll({ after }).endedBy, after).to.equal('invalid_token');
    }
    const current = store.changes.watch(scope, 'things', { after: '1' });
    expect(current.endedBy).to.equal(null);
    current.close();
  });

  it('prunes events older than the retention on a timer', async () => {
    store = await createTempEmbeddedStore(60);
    await create(store);
    const second = await create(store);
    await sleep(200);
    expect(store.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM changes').get()!.n).to.equal(0);
    expect(store.changes.watch(scope, 'things', { after: '1' }).endedBy).to.equal('history_lost');
    // Everything up to the last issued token was delivered, so resuming there loses nothing.
    const current = store.changes.watch(scope, 'things', { after: '2' });
    expect(current.endedBy).to.equal(null);
    const third = await create(store);
    const events = await drain(current);
    expect(events.map((e) => [e.token, e.documentId])).to.deep.equal([['3', third._id]]);
    expect(second._id).not.to.equal(third._id);
  });

  it('keeps events younger than the retention', async () => {
    store = await createTempEmbeddedStore(300_000);
    await create(store);
    expect(await store.changes.prune(Date.now() + 299_000)).to.equal(0);
    expect(await store.changes.prune(Date.now() + 301_000)).to.equal(1);
  });

  it('resumes from a token across a restart of the store', async () => {
    store = await createTempEmbeddedStore();
    const first = await create(store);
    const second = await create(store);
    const dataDir = store.file.replace(/[/\\]folio\.db$/, '');
    await store.close();
    const reopened = createEmbeddedStore({ dataDir, eventRetentionMs: 300_000 });
    await reopened.init();
    try {
      const sub = reopened.changes.watch(scope, 'things', { after: '1' });
      expect((await drain(sub)).map((e) => e.documentId)).to.deep.equal([second._id]);
      expect(first._id).not.to.equal(second._id);
    } finally {
      await reopened.close();
    }
  });

  it('keeps one tail of the change log, however many collections and subscriptions', async () => {
    store = await createTempEmbeddedStore();
    const subs = [
      store.changes.watch(scope, 'a'),
      store.changes.watch(scope, 'a'),
      store.changes.watch(scope, 'b'),
      store.changes.watch({ ...scope, env: 'test' }, 'a'),
      store.changes.watchAll(),
    ];
    expect(store.changes.sourceCount).to.equal(1);
    for (const sub of subs) sub.close();
    expect(store.changes.sourceCount).to.equal(0);
  });

  it('delivers commits made through another connection to the same file (a CLI next to the server)', async () => {
    store = await createTempEmbeddedStore();
    const sub = store.changes.watch(scope, 'things');
    await withOtherConnection(store, async (other) => {
      const document = await create(other);
      // Found by the tail's poll, not by a local commit.
      const [event] = await drain(sub, 1500);
      expect(event?.documentId).to.equal(document._id);
    });
  });

  it("delivers in commit order when another connection commits between this process's commits", async () => {
    store = await createTempEmbeddedStore();
    const sub = store.changes.watch(scope, 'things');
    await withOtherConnection(store, async (other) => {
      // This process keeps its own rows for the tail; the other connection's row sits between.
      const first = await create(store);
      const between = await create(other);
      const last = await create(store);
      const events = await drain(sub, 100);
      expect(events.map((e) => e.documentId)).to.deep.equal([first._id, between._id, last._id]);
      expect(events.map((e) => Number(e.token))).to.deep.equal([1, 2, 3]);
      expect(events[2]?.document).to.deep.equal(last);
    });
  });

  it("publishes an erased document's events as the erase left them in the log, never as first written", async () => {
    store = await createTempEmbeddedStore();
    const sub = store.changes.watch(scope, 'things');
    const erase = (id: string) => [{ kind: 'delete' as const, id, expectedVersion: 1, erase: true }];
    // The create and its erase in one group: the create's row is scrubbed before it is published.
    const together = firstVersion({ ssn: 'secret-1' });
    await Promise.all([
      store.documents.commit(scope, 'things', [putWrite(together)]),
      store.documents.commit(scope, 'things', erase(together._id)),
    ]);
    // A create held back behind a deferred commit, erased before the sync that publishes it.
    const held = firstVersion({ ssn: 'secret-2' });
    await store.documents.commit(scope, 'things', [putWrite(held)], { durable: false });
    await store.documents.commit(scope, 'things', erase(held._id));
    const events = await drain(sub, 100);
    expect(events.map((e) => [e.type, e.documentId])).to.deep.equal([
      ['created', together._id],
      ['deleted', together._id],
      ['created', held._id],
      ['deleted', held._id],
    ]);
    for (const event of events) expect(JSON.stringify(event.document)).to.not.include('secret');
  });

  it('ends a catch-up that falls behind pruning with history_lost rather than skip events', async () => {
    store = await createTempEmbeddedStore();
    for (let i = 0; i < 5; i++) await create(store);
    // Two events fit: the catch-up reads them, then waits for the consumer to make room.
    const sub = store.changes.watch(scope, 'things', { after: '1', bufferLimit: 2 });
    const it = sub[Symbol.asyncIterator]();
    expect((await it.next()).value?.token).to.equal('2');
    // Meanwhile the retention sweep removes events the catch-up has not read yet.
    store.db.exec('DELETE FROM changes WHERE seq <= 4');
    const rest: string[] = [];
    for (let next = await it.next(); !next.done; next = await it.next()) rest.push(next.value.token);
    expect(rest).to.deep.equal(['3']);
    expect(sub.endedBy).to.equal('history_lost');
  });

  it('ends a subscription made after close() with store_closed', async () => {
    store = await createTempEmbeddedStore();
    const feed = store.changes;
    await store.close();
    const sub = feed.watch(scope, 'things');
    expect(sub.endedBy).to.equal('store_closed');
    expect(await drain(sub)).to.deep.equal([]);
  });
});
