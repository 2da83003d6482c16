/**
 * What only the MongoDB store promises, on a live server (`@mongodb`; skipped with the one
 * SKIPPED line when there is none): the documented layout, the indexes, collection creation
 * with pre- and post-images, the resumed subscription's catch-up stream, what the one change
 * stream selects, and invalidation. Everything the port promises is the conformance suite's.
 */
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import type { SessionDoc } from '../../src/store/mongodb/accounts/systemRecords.js';
import type { VersionRecord } from '../../src/store/mongodb/documents/writePlan.js';
import type { MongoStore } from '../../src/store/mongodb/index.js';
import { SYSTEM_INDEXES, VERSIONS_INDEXES } from '../../src/store/mongodb/layout/indexes.js';
import {
  projectDbName,
  SYSTEM_COLLECTIONS,
  type SystemCollection,
  systemDbName,
  versionsCollectionName,
} from '../../src/store/mongodb/layout/naming.js';
import type { DataScope, Store } from '../../src/store/port.js';
import { type StoredDocument, toStored } from '../../src/store/storedForm.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { ChangeReader, firstVersion, putWrite } from './fixtures.js';

const WAIT_MS = 10_000;

function asMongo(store: Store): MongoStore {
  if (store.kind !== 'mongodb' || !('client' in store)) throw new Error('not the MongoDB store');
  return store as MongoStore;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const factory of await mongoStoreFactories()) {
  describe(`MongoDB store specifics: ${factory.name}`, () => {
    let store: MongoStore;
    const newScope = (): DataScope => ({ projectId: newId('prj'), env: 'test' });
    const db = (scope: DataScope) => store.client.db(projectDbName(store.dbPrefix, scope));

    before(async () => {
      store = asMongo(await factory.create());
    });

    after(async () => {
      if (store) await factory.destroy(store);
    });

    it('creates the system indexes at init, as declared', async () => {
      const system = store.client.db(systemDbName(store.dbPrefix));
      for (const role of Object.keys(SYSTEM_INDEXES) as SystemCollection[]) {
        const existing = await system.collection(SYSTEM_COLLECTIONS[role]).listIndexes().toArray();
        for (const index of SYSTEM_INDEXES[role]) {
          const found = existing.find((e) => e.name === index.name);
          expect(found, `${role}.${index.name}`).not.to.equal(undefined);
          expect(found!.key).to.deep.equal(index.key);
          expect(found!.unique ?? false).to.equal(index.unique ?? false);
          expect(found!.expireAfterSeconds).to.equal(index.expireAfterSeconds);
        }
      }
    });

    it('creates a collection by its first write, with pre- and post-images and its version sidecar', async () => {
      const scope = newScope();
      const d = firstVersion({ name: 'first' });
      expect(await store.documents.commit(scope, 'fresh', [putWrite(d)])).to.deep.equal({ ok: true });
      const [info] = await db(scope).listCollections({ name: 'fresh' }).toArray();
      const options = (info as { options?: { changeStreamPreAndPostImages?: unknown } }).options;
      expect(options?.changeStreamPreAndPostImages).to.deep.equal({ enabled: true });
      const indexes = await db(scope).collection(versionsCollectionName('fresh')).listIndexes().toArray();
      for (const index of VERSIONS_INDEXES) {
        const found = indexes.find((e) => e.name === index.name);
        expect(found?.key).to.deep.equal(index.key);
        expect(found?.unique).to.equal(true);
      }
    });

    it('stores documents and version records in the documented layout', async () => {
      const scope = newScope();
      const v1 = firstVersion({ name: 'Ada', nested: { n: 1.5 } });
      const v2 = { ...v1, name: 'Ada L.', $version: 2, $updatedAt: isoNow() };
      await store.documents.commit(scope, 'layout', [putWrite(v1)]);
      await store.documents.commit(scope, 'layout', [putWrite(v2)]);
      expect(await db(scope).collection<StoredDocument>('layout').findOne({ _id: v1._id })).to.deep.equal(
        toStored(v2),
      );
      const records = await db(scope)
        .collection<VersionRecord>(versionsCollectionName('layout'))
        .find({ docId: v1._id }, { projection: { _id: 0 }, sort: { version: 1 } })
        .toArray();
      expect(records).to.deep.equal([
        {
          docId: v1._id,
          version: 1,
          operation: 'create',
          timestamp: v1.$updatedAt,
          apiKeyHint: 'folio_sk_test_...abcd',
          document: toStored(v1),
        },
        {
          docId: v1._id,
          version: 2,
          operation: 'update',
          timestamp: v2.$updatedAt,
          apiKeyHint: 'folio_sk_test_...abcd',
          document: toStored(v2),
        },
      ]);
    });

    it('stores a session expiry as a Date, for the TTL index', async () => {
      const session = {
        tokenHash: newId('req').toLowerCase(),
        accountId: newId('acc'),
        createdAt: isoNow(),
        expiresAt: isoNow(Date.now() + 60_000),
      };
      await store.accounts.createSession(session);
      const raw = await store.client
        .db(systemDbName(store.dbPrefix))
        .collection<SessionDoc>(SYSTEM_COLLECTIONS.sessions)
        .findOne({ _id: session.tokenHash });
      expect(raw?.expiresAt).to.be.instanceOf(Date);
      expect(raw!.expiresAt.toISOString()).to.equal(session.expiresAt);
    });

    it('reads a resumed subscription’s history on its own stream, then only the shared one', async () => {
      const scope = newScope();
      const live = new ChangeReader(store.changes.watch(scope, 'resumes'));
      const resumed: ChangeReader[] = [];
      try {
        await live.sub.ready;
        const [a, b, c] = [firstVersion({ i: 'a' }), firstVersion({ i: 'b' }), firstVersion({ i: 'c' })];
        await store.documents.commit(scope, 'resumes', [putWrite(a)]);
        const eventA = await live.next();
        await store.documents.commit(scope, 'resumes', [putWrite(b)]);
        expect((await live.next()).documentId).to.equal(b._id);
        resumed.push(new ChangeReader(store.changes.watch(scope, 'resumes', { after: eventA.token })));
        // Its own catch-up stream besides the one shared stream.
        expect(store.changes.catchUpCount).to.equal(1);
        expect(store.changes.sourceCount).to.equal(1);
        expect((await resumed[0]!.next()).documentId).to.equal(b._id);
        // Caught up: the catch-up stream closes without waiting for another write.
        await until(() => store.changes.catchUpCount === 0, 'the catch-up stream to close');
        await store.documents.commit(scope, 'resumes', [putWrite(c)]);
        expect((await resumed[0]!.next()).documentId).to.equal(c._id);
        expect((await live.next()).documentId).to.equal(c._id);
      } finally {
        live.sub.close();
        for (const r of resumed) r.sub.close();
      }
    });

    it('never shows version sidecars or the system database, whatever is written there', async () => {
      const scope = newScope();
      const all = new ChangeReader(store.changes.watchAll());
      try {
        await all.sub.ready;
        const v1 = firstVersion({ n: 1 });
        await store.documents.commit(scope, 'quiet', [putWrite(v1)]);
        await store.accounts.touchKey(newId('key'), isoNow());
        await db(scope).collection(versionsCollectionName('quiet')).insertOne({ stray: true });
        const v2 = firstVersion({ n: 2 });
        await store.documents.commit(scope, 'quiet', [putWrite(v2)]);
        expect((await all.take(2)).map((e) => e.documentId)).to.deep.equal([v1._id, v2._id]);
      } finally {
        all.sub.close();
      }
    });

    it('frees a stream slot whose lease was not renewed in time (a crashed instance)', async () => {
      const holder = newId('key');
      expect(await store.streamSlots.acquire(holder, 'crashed', 1, 300)).to.equal(true);
      expect(await store.streamSlots.acquire(holder, 'next', 1, 60_000)).to.equal(false);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await store.streamSlots.renew(holder, 'crashed', 60_000)).to.equal(false);
      expect(await store.streamSlots.acquire(holder, 'next', 1, 60_000)).to.equal(true);
    });

    it('ends subscribers with invalidated when their collection is dropped', async () => {
      const scope = newScope();
      const reader = new ChangeReader(store.changes.watch(scope, 'doomed'));
      try {
        await store.documents.commit(scope, 'doomed', [putWrite(firstVersion({}))]);
        await reader.next();
        await db(scope).collection('doomed').drop();
        await reader.ended();
        expect(reader.sub.endedBy).to.equal('invalidated');
      } finally {
        reader.sub.close();
      }
    });
  });
}
