/**
 * The storage port's conformance suite: every guarantee `src/store/port.ts` states, checked
 * through the port alone, against every store available (the embedded store always, MongoDB
 * when test/support/mongodb.ts can provide one). Store-specific checks live beside it in
 * `embedded*.test.ts` / the MongoDB store's own tests.
 */
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import {
  type ApiKeyRecord,
  type ChangeEvent,
  type ChangeFeed,
  type DataScope,
  DuplicateError,
  type FolioDocument,
  type JsonObject,
  type Store,
} from '../../src/store/port.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { schemaAndTrashConformance } from './conformance/schemasAndTrash.js';
import { embeddedFactory } from './embeddedFactory.js';
import type { StoreFactory } from './factories.js';
import { ChangeReader, firstVersion, HINT, nextVersion, putWrite } from './fixtures.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];

// ---------------------------------------------------------------------------------------------
// Fixtures

const COLLECTION = 'things';
/** How long to wait for an event that should come (MongoDB change streams are not instant). */

function newScope(env: DataScope['env'] = 'test'): DataScope {
  return { projectId: newId('prj'), env };
}

async function mustCommit(
  store: Store,
  scope: DataScope,
  writes: Parameters<Store['documents']['commit']>[2],
) {
  const result = await store.documents.commit(scope, COLLECTION, writes);
  expect(result, JSON.stringify(result)).to.deep.equal({ ok: true });
}

/** Create a document and write `updates` more versions of it; returns every version. */
async function writeVersions(store: Store, scope: DataScope, updates: number, keepVersions = 10) {
  const versions = [firstVersion({ n: 0 })];
  await mustCommit(store, scope, [putWrite(versions[0]!, { keepVersions })]);
  for (let i = 1; i <= updates; i++) {
    const next = nextVersion(versions[i - 1]!, { n: i });
    await mustCommit(store, scope, [putWrite(next, { keepVersions })]);
    versions.push(next);
  }
  return versions;
}

/** Observe fan-out: stores expose how many sources their feed holds open. */
function sourceCount(feed: ChangeFeed): number {
  const count = (feed as { sourceCount?: unknown }).sourceCount;
  if (typeof count !== 'number') throw new Error('the change feed must expose a numeric `sourceCount`');
  return count;
}

/** Not on the port: both stores' feeds count the catch-up reads they hold open. */
function catchUpCount(feed: ChangeFeed): number {
  const count = (feed as { catchUpCount?: unknown }).catchUpCount;
  if (typeof count !== 'number') throw new Error('the change feed must expose a numeric `catchUpCount`');
  return count;
}

async function until(condition: () => boolean, what: string, waitMs = 10_000): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function apiKey(projectId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return {
    id: newId('key'),
    projectId,
    name: 'server',
    env: 'test',
    scope: 'read-write',
    config: { note: 'x', nested: { a: [1, 2] } },
    status: 'active',
    keyHash: newId('key').toLowerCase(),
    hint: HINT,
    createdAt: isoNow(),
    lastUsedAt: null,
    revokedAt: null,
    rotatedFrom: null,
    rules: null,
    ...overrides,
  };
}

// ---------------------------------------------------------------------------------------------

for (const factory of factories) {
  describe(`store conformance: ${factory.name}`, () => {
    let store: Store;

    before(async () => {
      store = await factory.create();
    });

    after(async () => {
      if (store) await factory.destroy(store);
    });

    schemaAndTrashConformance(() => store);

    describe('health', () => {
      it('ping resolves while the store is open and rejects once it is closed', async () => {
        await store.ping();
        const other = await factory.create();
        await other.close();
        let failed = false;
        await other.ping().catch(() => {
          failed = true;
        });
        expect(failed).to.equal(true);
        await factory.destroy(other);
      });
    });

    describe('declared indexes: queries see each write', () => {
      it('an array written into an indexed path is filtered and sorted as an array by the next query', async () => {
        const scope = newScope();
        const at = (prices: Array<number | number[]>) =>
          prices.map((price, i) => putWrite(firstVersion({ price }, `doc_${i}`)));
        await store.indexes.create(
          scope,
          COLLECTION,
          { name: 'price_1', fields: [{ path: 'price', order: 1 }], unique: false },
          10,
        );
        await mustCommit(store, scope, at([60, 70, 80]));
        const query = {
          filter: { price: { $gt: 50 } },
          sort: [
            ['price', 1],
            ['_id', 1],
          ] as Array<[string, 1 | -1]>,
          skip: 0,
          limit: 10,
        };
        const ids = async () => (await store.documents.find(scope, COLLECTION, query)).map((d) => d._id);
        const count = () => store.documents.count(scope, COLLECTION, query.filter);
        // Read once with no array anywhere in the path (the embedded store remembers that).
        expect(await ids()).to.deep.equal(['doc_0', 'doc_1', 'doc_2']);
        expect(await count()).to.equal(3);
        // MongoDB's rules for arrays: a filter matches on any element, an ascending sort uses the least.
        await mustCommit(store, scope, [putWrite(firstVersion({ price: [10, 100] }, 'doc_9'))]);
        expect(await ids()).to.deep.equal(['doc_9', 'doc_0', 'doc_1', 'doc_2']);
        expect(await count()).to.equal(4);
      });
    });

    describe('declared indexes: the maximum is counted as they are created', () => {
      const declaration = (path: string) => ({
        name: `${path}_1`,
        fields: [{ path, order: 1 as const }],
        unique: false,
      });

      it('creates while fewer than the maximum exist, then answers null and creates nothing', async () => {
        const scope = newScope();
        expect(await store.indexes.create(scope, 'limited', declaration('a'), 2)).to.include({
          state: 'ready',
        });
        expect(await store.indexes.create(scope, 'limited', declaration('b'), 2)).to.include({
          state: 'ready',
        });
        expect(await store.indexes.create(scope, 'limited', declaration('c'), 2)).to.equal(null);
        expect((await store.indexes.list(scope, 'limited')).map((i) => i.name).sort()).to.deep.equal([
          'a_1',
          'b_1',
        ]);
        // Per collection and per scope.
        expect(await store.indexes.create(scope, 'other', declaration('c'), 2)).to.not.equal(null);
        expect(await store.indexes.create(newScope(), 'limited', declaration('c'), 2)).to.not.equal(null);
      });

      it('a taken name is DuplicateError, below the maximum or at it', async () => {
        const scope = newScope();
        await store.indexes.create(scope, 'named', declaration('a'), 2);
        for (const max of [2, 1]) {
          let error: unknown;
          await store.indexes.create(scope, 'named', declaration('a'), max).catch((e) => {
            error = e;
          });
          expect(error, `max ${max}`).to.be.instanceOf(DuplicateError);
        }
      });

      it('racing creates never pass the maximum together', async () => {
        const scope = newScope();
        const created = await Promise.all(
          ['a', 'b', 'c', 'd', 'e', 'f'].map((path) =>
            store.indexes.create(scope, 'raced', declaration(path), 3),
          ),
        );
        expect(created.filter((c) => c !== null)).to.have.length(3);
        expect(await store.indexes.list(scope, 'raced')).to.have.length(3);
      });
    });

    describe('documents: writes and conditions', () => {
      it('creates a document with expectedVersion 0 and returns it unchanged from get', async () => {
        const scope = newScope();
        const doc = firstVersion({ name: 'Ada', nested: { list: [1, 'two', null, { x: true }] }, n: 1.5 });
        await mustCommit(store, scope, [putWrite(doc)]);
        expect(await store.documents.get(scope, COLLECTION, doc._id)).to.deep.equal(doc);
      });

      it('returns null for an unknown id', async () => {
        expect(await store.documents.get(newScope(), COLLECTION, newId('doc'))).to.equal(null);
      });

      it('replaces the document when the write names its current version', async () => {
        const scope = newScope();
        const v1 = firstVersion({ name: 'Ada', gone: true });
        await mustCommit(store, scope, [putWrite(v1)]);
        const v2 = nextVersion(v1, { name: 'Grace' });
        await mustCommit(store, scope, [putWrite(v2)]);
        const current = await store.documents.get(scope, COLLECTION, v1._id);
        expect(current).to.deep.equal(v2);
        expect(current).not.to.have.property('gone');
      });

      it('applies a commit after the deferred ones made before it, though they have not resolved', async () => {
        const scope = newScope();
        const v1 = firstVersion({ n: 1 });
        const v2 = nextVersion(v1, { n: 2 });
        const v3 = nextVersion(v2, { n: 3 });
        // Each follows the one before: it holds only if that one was applied first. The last
        // is durable, as a bulk request's last operation.
        const results = await Promise.all(
          [v1, v2, v3].map((doc) =>
            store.documents.commit(scope, COLLECTION, [putWrite(doc)], { durable: doc === v3 }),
          ),
        );
        await store.documents.sync();
        expect(results).to.deep.equal([{ ok: true }, { ok: true }, { ok: true }]);
        expect(await store.documents.get(scope, COLLECTION, v1._id)).to.deep.equal(v3);
      });

      it('refuses to create an id that exists, reporting its current version', async () => {
        const scope = newScope();
        const v1 = firstVersion({ name: 'Ada' });
        await mustCommit(store, scope, [putWrite(v1)]);
        const again = firstVersion({ name: 'Impostor' }, v1._id);
        const result = await store.documents.commit(scope, COLLECTION, [putWrite(again)]);
        expect(result).to.deep.equal({ ok: false, conflicts: [{ id: v1._id, currentVersion: 1 }] });
        expect(await store.documents.get(scope, COLLECTION, v1._id)).to.deep.equal(v1);
      });

      it('refuses a stale expectedVersion, reporting the current version', async () => {
        const scope = newScope();
        const [v1, , v3] = await writeVersions(store, scope, 2);
        const stale = nextVersion(v1!, { n: 'stale' });
        const result = await store.documents.commit(scope, COLLECTION, [putWrite(stale)]);
        expect(result).to.deep.equal({ ok: false, conflicts: [{ id: v1!._id, currentVersion: 3 }] });
        expect(await store.documents.get(scope, COLLECTION, v1!._id)).to.deep.equal(v3);
        const versions = await store.documents.listVersions(scope, COLLECTION, v1!._id);
        expect(
          versions.map((v) => v.version),
          'no version recorded',
        ).to.deep.equal([3, 2, 1]);
      });

      it('refuses to update a missing document, reporting currentVersion null', async () => {
        const scope = newScope();
        const ghost = nextVersion(firstVersion({}), { n: 1 });
        const result = await store.documents.commit(scope, COLLECTION, [putWrite(ghost)]);
        expect(result).to.deep.equal({ ok: false, conflicts: [{ id: ghost._id, currentVersion: null }] });
        expect(await store.documents.get(scope, COLLECTION, ghost._id)).to.equal(null);
      });

      it('deletes a document and its whole history when the version matches', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 2);
        const id = versions[0]!._id;
        await mustCommit(store, scope, [{ kind: 'delete', id, expectedVersion: 3 }]);
        expect(await store.documents.get(scope, COLLECTION, id)).to.equal(null);
        expect(await store.documents.listVersions(scope, COLLECTION, id)).to.deep.equal([]);
        expect(await store.documents.getVersion(scope, COLLECTION, id, 1)).to.equal(null);
        expect(await store.documents.getVersion(scope, COLLECTION, id, 3)).to.equal(null);
      });

      it('refuses a delete with a stale version and a delete of a missing document', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 1);
        const id = versions[0]!._id;
        const missing = newId('doc');
        const result = await store.documents.commit(scope, COLLECTION, [
          { kind: 'delete', id, expectedVersion: 1 },
        ]);
        expect(result).to.deep.equal({ ok: false, conflicts: [{ id, currentVersion: 2 }] });
        const result2 = await store.documents.commit(scope, COLLECTION, [
          { kind: 'delete', id: missing, expectedVersion: 1 },
        ]);
        expect(result2).to.deep.equal({ ok: false, conflicts: [{ id: missing, currentVersion: null }] });
        expect(await store.documents.get(scope, COLLECTION, id)).to.deep.equal(versions[1]);
        expect(await store.documents.listVersions(scope, COLLECTION, id)).to.have.length(2);
      });

      it('writes nothing from a batch with a conflicting write, and reports every conflict', async () => {
        const scope = newScope();
        const existing = await writeVersions(store, scope, 1);
        const doomed = firstVersion({ name: 'never' });
        const toDelete = await writeVersions(store, scope, 0);
        const missing = newId('doc');
        const sub = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          const result = await store.documents.commit(scope, COLLECTION, [
            putWrite(doomed),
            { kind: 'delete', id: toDelete[0]!._id, expectedVersion: 1 },
            putWrite(nextVersion(existing[0]!, { n: 'stale' })),
            { kind: 'delete', id: missing, expectedVersion: 4 },
          ]);
          expect(result).to.deep.equal({
            ok: false,
            conflicts: [
              { id: existing[0]!._id, currentVersion: 2 },
              { id: missing, currentVersion: null },
            ],
          });
          expect(await store.documents.get(scope, COLLECTION, doomed._id)).to.equal(null);
          expect(await store.documents.listVersions(scope, COLLECTION, doomed._id)).to.deep.equal([]);
          expect(await store.documents.get(scope, COLLECTION, toDelete[0]!._id)).to.deep.equal(toDelete[0]);
          expect(await store.documents.get(scope, COLLECTION, existing[0]!._id)).to.deep.equal(existing[1]);
          // No event either: the first event the watcher sees is the next successful write.
          const marker = firstVersion({ name: 'marker' });
          await mustCommit(store, scope, [putWrite(marker)]);
          const event = await sub.next();
          expect(event.documentId).to.equal(marker._id);
        } finally {
          sub.sub.close();
        }
      });

      it('commits every write of a batch, each with its version record', async () => {
        const scope = newScope();
        const old = await writeVersions(store, scope, 0);
        const a = firstVersion({ name: 'a' });
        const b = firstVersion({ name: 'b' });
        await mustCommit(store, scope, [
          putWrite(a),
          putWrite(b),
          { kind: 'delete', id: old[0]!._id, expectedVersion: 1 },
        ]);
        expect(await store.documents.get(scope, COLLECTION, a._id)).to.deep.equal(a);
        expect(await store.documents.get(scope, COLLECTION, b._id)).to.deep.equal(b);
        expect(await store.documents.get(scope, COLLECTION, old[0]!._id)).to.equal(null);
        expect(await store.documents.getVersion(scope, COLLECTION, b._id, 1)).to.deep.equal(b);
      });

      it('starts a fresh history for a document re-created after a delete', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 2);
        const id = versions[0]!._id;
        await mustCommit(store, scope, [{ kind: 'delete', id, expectedVersion: 3 }]);
        const reborn = firstVersion({ name: 'again' }, id);
        await mustCommit(store, scope, [putWrite(reborn)]);
        expect(await store.documents.get(scope, COLLECTION, id)).to.deep.equal(reborn);
        const list = await store.documents.listVersions(scope, COLLECTION, id);
        expect(list.map((v) => v.version)).to.deep.equal([1]);
        expect(await store.documents.getVersion(scope, COLLECTION, id, 1)).to.deep.equal(reborn);
      });

      it('loses no update under 50 concurrent read-modify-write loops: versions run 1..51', async function () {
        this.timeout(60_000);
        const scope = newScope();
        const seed = firstVersion({ count: 0 });
        await mustCommit(store, scope, [putWrite(seed, { keepVersions: 100 })]);
        let conflicts = 0;
        const loop = async (worker: number) => {
          for (;;) {
            const current = (await store.documents.get(scope, COLLECTION, seed._id))!;
            const { _id, $createdAt, $updatedAt, $version, ...fields } = current;
            const next = nextVersion(current, {
              ...fields,
              count: (fields.count as number) + 1,
              [`w${worker}`]: true,
            });
            const result = await store.documents.commit(scope, COLLECTION, [
              putWrite(next, { keepVersions: 100 }),
            ]);
            if (result.ok) return;
            conflicts++;
            expect(result.conflicts).to.have.length(1);
            expect(result.conflicts[0]!.currentVersion).to.be.greaterThan(current.$version);
          }
        };
        await Promise.all(Array.from({ length: 50 }, (_, i) => loop(i)));
        const final = (await store.documents.get(scope, COLLECTION, seed._id))!;
        expect(final.$version).to.equal(51);
        expect(final.count).to.equal(50);
        expect(Object.keys(final).filter((k) => k.startsWith('w'))).to.have.length(50);
        const list = await store.documents.listVersions(scope, COLLECTION, seed._id);
        expect(list.map((v) => v.version)).to.deep.equal(Array.from({ length: 51 }, (_, i) => 51 - i));
        // The loops really raced (otherwise this test proves nothing).
        expect(conflicts).to.be.greaterThan(0);
      });
    });

    describe('documents: version history', () => {
      it('lists versions newest first with operation, timestamp and key hint', async () => {
        const scope = newScope();
        const v1 = firstVersion({ n: 1 });
        await mustCommit(store, scope, [putWrite(v1)]);
        const v2 = nextVersion(v1, { n: 2 });
        await mustCommit(store, scope, [putWrite(v2, { operation: 'patch' })]);
        const v3 = nextVersion(v2, { n: 1 });
        await mustCommit(store, scope, [
          { ...putWrite(v3, { operation: 'restore' }), apiKeyHint: 'folio_sk_live_...wxyz' },
        ]);
        const list = await store.documents.listVersions(scope, COLLECTION, v1._id);
        expect(
          list.map(({ version, operation, apiKeyHint }) => ({ version, operation, apiKeyHint })),
        ).to.deep.equal([
          { version: 3, operation: 'restore', apiKeyHint: 'folio_sk_live_...wxyz' },
          { version: 2, operation: 'patch', apiKeyHint: HINT },
          { version: 1, operation: 'create', apiKeyHint: HINT },
        ]);
        for (const v of list) expect(new Date(v.timestamp).toISOString()).to.equal(v.timestamp);
      });

      it('returns the full document as it was at each stored version', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 3);
        for (const v of versions) {
          expect(await store.documents.getVersion(scope, COLLECTION, v._id, v.$version)).to.deep.equal(v);
        }
        expect(await store.documents.getVersion(scope, COLLECTION, versions[0]!._id, 5)).to.equal(null);
      });

      it('returns an empty history for an unknown document', async () => {
        expect(await store.documents.listVersions(newScope(), COLLECTION, newId('doc'))).to.deep.equal([]);
      });

      it('keeps exactly the keepVersions newest versions, dropping the oldest', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 5, 3);
        const id = versions[0]!._id;
        const list = await store.documents.listVersions(scope, COLLECTION, id);
        expect(list.map((v) => v.version)).to.deep.equal([6, 5, 4]);
        expect(await store.documents.getVersion(scope, COLLECTION, id, 3)).to.equal(null);
        expect(await store.documents.getVersion(scope, COLLECTION, id, 4)).to.deep.equal(versions[3]);
      });

      it('prunes to a smaller keepVersions as soon as the next write asks for it', async () => {
        const scope = newScope();
        const versions = await writeVersions(store, scope, 4, 10);
        const next = nextVersion(versions[4]!, { n: 'last' });
        await mustCommit(store, scope, [putWrite(next, { keepVersions: 2 })]);
        const list = await store.documents.listVersions(scope, COLLECTION, next._id);
        expect(list.map((v) => v.version)).to.deep.equal([6, 5]);
      });
    });

    describe('documents: scopes', () => {
      it('keeps the same collection separate across environments and projects', async () => {
        const live = newScope('live');
        const test: DataScope = { projectId: live.projectId, env: 'test' };
        const other = newScope('live');
        const doc = firstVersion({ where: 'live' });
        await mustCommit(store, live, [putWrite(doc)]);
        for (const scope of [test, other]) {
          expect(await store.documents.get(scope, COLLECTION, doc._id)).to.equal(null);
          expect(await store.documents.listVersions(scope, COLLECTION, doc._id)).to.deep.equal([]);
          expect(await store.documents.getVersion(scope, COLLECTION, doc._id, 1)).to.equal(null);
          expect(await store.documents.count(scope, COLLECTION, {})).to.equal(0);
          expect(
            await store.documents.find(scope, COLLECTION, {
              filter: {},
              sort: [['_id', 1]],
              skip: 0,
              limit: 10,
            }),
          ).to.deep.equal([]);
          // The same id is free to be created there, independently.
          const twin = firstVersion({ where: scope.env }, doc._id);
          await mustCommit(store, scope, [putWrite(twin)]);
          expect(await store.documents.get(scope, COLLECTION, doc._id)).to.deep.equal(twin);
        }
        expect(await store.documents.get(live, COLLECTION, doc._id)).to.deep.equal(doc);
      });

      it('keeps collections of one scope separate', async () => {
        const scope = newScope();
        const doc = firstVersion({ name: 'x' });
        await mustCommit(store, scope, [putWrite(doc)]);
        expect(await store.documents.get(scope, 'others', doc._id)).to.equal(null);
        expect(await store.documents.count(scope, 'others', {})).to.equal(0);
      });
    });

    describe('documents: find and count', () => {
      const scope = newScope();
      const people: FolioDocument[] = [];
      const byId = () => [...people].sort((a, b) => (a._id < b._id ? -1 : 1));
      const all = { filter: {}, sort: [['_id', 1]] as Array<[string, 1 | -1]>, skip: 0, limit: 100 };

      before(async () => {
        const rows: JsonObject[] = [
          { name: 'Ada', age: 36, city: { name: 'London' }, tags: ['math'] },
          { name: 'alan', age: 41, city: { name: 'Wilmslow' }, tags: ['math', 'code'] },
          { name: 'Grace', age: 85, city: { name: 'Arlington' } },
          { name: 'Linus', age: 28, city: { name: 'Helsinki' }, tags: ['code'] },
          { name: 'Barbara', age: 41 },
        ];
        for (const fields of rows) {
          const doc = firstVersion(fields);
          await mustCommit(store, scope, [putWrite(doc)]);
          people.push(doc);
        }
        const updated = nextVersion(people[4]!, { name: 'Barbara', age: 42 });
        await mustCommit(store, scope, [putWrite(updated)]);
        people[4] = updated;
        // Noise in a neighbouring scope and collection.
        await mustCommit(store, newScope(), [putWrite(firstVersion({ name: 'Ada', age: 36 }))]);
        await store.documents.commit(scope, 'others', [putWrite(firstVersion({ name: 'Ada', age: 36 }))]);
      });

      it('returns every document of the collection in _id order for an empty filter', async () => {
        expect(await store.documents.find(scope, COLLECTION, all)).to.deep.equal(byId());
        expect(await store.documents.count(scope, COLLECTION, {})).to.equal(5);
      });

      it('filters with comparison operators and counts the same set', async () => {
        const filter = { age: { $gt: 36, $lte: 42 } };
        const found = await store.documents.find(scope, COLLECTION, { ...all, filter });
        expect(found.map((d) => d.name)).to.have.members(['alan', 'Barbara']);
        expect(await store.documents.count(scope, COLLECTION, filter)).to.equal(2);
      });

      // Only the operators the port promises (what src/query generates): equality is `$in: [v]`.
      it('filters with $and, $in, $nin, $exists, nested paths, arrays and case-insensitive $regex', async () => {
        const names = async (filter: JsonObject) =>
          (await store.documents.find(scope, COLLECTION, { ...all, filter })).map((d) => d.name).sort();
        expect(await names({ name: { $in: ['Ada', 'Grace', 'nobody'] } })).to.deep.equal(['Ada', 'Grace']);
        expect(
          await names({ $and: [{ age: { $gte: 30 } }, { name: { $nin: ['Ada', 'Grace'] } }] }),
        ).to.deep.equal(['Barbara', 'alan']);
        expect(await names({ 'city.name': { $exists: false } })).to.deep.equal(['Barbara']);
        expect(await names({ 'city.name': { $in: ['London'] } })).to.deep.equal(['Ada']);
        expect(await names({ name: { $regex: '^a', $options: 'i' } })).to.deep.equal(['Ada', 'alan']);
        expect(await names({ tags: { $in: ['code'] } })).to.deep.equal(['Linus', 'alan']);
      });

      it('filters on stored metadata paths', async () => {
        const found = await store.documents.find(scope, COLLECTION, {
          ...all,
          filter: { '_folio.version': { $gte: 2 } },
        });
        expect(found).to.deep.equal([people[4]]);
      });

      it('sorts by several keys, then skips and limits', async () => {
        const sort: Array<[string, 1 | -1]> = [
          ['age', -1],
          ['_id', 1],
        ];
        const expected = [...people].sort(
          (a, b) => (b.age as number) - (a.age as number) || (a._id < b._id ? -1 : 1),
        );
        expect(await store.documents.find(scope, COLLECTION, { ...all, sort })).to.deep.equal(expected);
        expect(
          await store.documents.find(scope, COLLECTION, { ...all, sort, skip: 1, limit: 2 }),
        ).to.deep.equal(expected.slice(1, 3));
        expect(
          await store.documents.find(scope, COLLECTION, { ...all, sort, skip: 5, limit: 2 }),
        ).to.deep.equal([]);
      });

      it('projects to the requested paths plus _id', async () => {
        const found = await store.documents.find(scope, COLLECTION, {
          ...all,
          filter: { name: { $in: ['Ada'] } },
          projection: ['name', 'city.name', '_folio.version'],
        });
        expect(found).to.deep.equal([
          { _id: people[0]!._id, name: 'Ada', city: { name: 'London' }, $version: 1 },
        ]);
      });
    });

    describe('change feed', () => {
      it('delivers created, updated and deleted events in commit order with increasing tokens', async () => {
        const scope = newScope();
        const reader = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          const v1 = firstVersion({ name: 'Ada' });
          await mustCommit(store, scope, [putWrite(v1)]);
          const v2 = nextVersion(v1, { name: 'Ada L.' });
          await mustCommit(store, scope, [putWrite(v2, { operation: 'patch' })]);
          await mustCommit(store, scope, [{ kind: 'delete', id: v1._id, expectedVersion: 2 }]);
          const events = await reader.take(3);
          expect(events.map((e) => [e.type, e.collection, e.documentId])).to.deep.equal([
            ['created', COLLECTION, v1._id],
            ['updated', COLLECTION, v1._id],
            ['deleted', COLLECTION, v1._id],
          ]);
          expect(events[0]!.document).to.deep.equal(v1);
          expect(events[1]!.document).to.deep.equal(v2);
          // A deleted event carries the document as it was just before the delete.
          expect(events[2]!.document).to.deep.equal(v2);
          expect(new Set(events.map((e) => e.token)).size).to.equal(3);
          for (const e of events) expect(e.scope).to.deep.equal(scope);
          for (const e of events) expect(new Date(e.timestamp).toISOString()).to.equal(e.timestamp);
        } finally {
          reader.sub.close();
        }
      });

      it("an erasing delete's event carries the document's id and metadata only, and is its only event", async () => {
        const scope = newScope();
        const reader = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          const v1 = firstVersion({ secret: 'erase me' });
          await mustCommit(store, scope, [putWrite(v1)]);
          await mustCommit(store, scope, [{ kind: 'delete', id: v1._id, expectedVersion: 1, erase: true }]);
          const after = firstVersion({});
          await mustCommit(store, scope, [putWrite(after)]);
          const events = await reader.take(3);
          expect(events.map((e) => [e.type, e.documentId])).to.deep.equal([
            ['created', v1._id],
            ['deleted', v1._id],
            ['created', after._id],
          ]);
          const { _id, $createdAt, $updatedAt, $version } = v1;
          expect(events[1]!.document).to.deep.equal({ _id, $createdAt, $updatedAt, $version });
        } finally {
          reader.sub.close();
        }
      });

      it('yields one event per write of a batch, in write order', async () => {
        const scope = newScope();
        const reader = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          const docs = [firstVersion({ i: 0 }), firstVersion({ i: 1 }), firstVersion({ i: 2 })];
          await mustCommit(
            store,
            scope,
            docs.map((d) => putWrite(d)),
          );
          const events = await reader.take(3);
          expect(events.map((e) => e.documentId)).to.deep.equal(docs.map((d) => d._id));
        } finally {
          reader.sub.close();
        }
      });

      it('starts from now when no token is given', async () => {
        const scope = newScope();
        await mustCommit(store, scope, [putWrite(firstVersion({ when: 'before' }))]);
        const reader = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          const after = firstVersion({ when: 'after' });
          await mustCommit(store, scope, [putWrite(after)]);
          expect((await reader.next()).documentId).to.equal(after._id);
        } finally {
          reader.sub.close();
        }
      });

      it('delivers only its own collection and scope', async () => {
        const scope = newScope('live');
        const reader = new ChangeReader(store.changes.watch(scope, COLLECTION));
        try {
          await mustCommit(store, { projectId: scope.projectId, env: 'test' }, [putWrite(firstVersion({}))]);
          await mustCommit(store, newScope('live'), [putWrite(firstVersion({}))]);
          await store.documents.commit(scope, 'others', [putWrite(firstVersion({}))]);
          const mine = firstVersion({ mine: true });
          await mustCommit(store, scope, [putWrite(mine)]);
          expect((await reader.next()).documentId).to.equal(mine._id);
        } finally {
          reader.sub.close();
        }
      });

      it('resumes after a token: replays exactly the missed events, then continues live', async () => {
        const scope = newScope();
        const first = new ChangeReader(store.changes.watch(scope, COLLECTION));
        const docs = Array.from({ length: 5 }, (_, i) => firstVersion({ i }));
        let seen: ChangeEvent[];
        try {
          await mustCommit(store, scope, [putWrite(docs[0]!)]);
          await mustCommit(store, scope, [putWrite(docs[1]!)]);
          seen = await first.take(2);
        } finally {
          first.sub.close();
        }
        // Missed while disconnected:
        await mustCommit(store, scope, [putWrite(docs[2]!)]);
        await mustCommit(store, scope, [putWrite(docs[3]!)]);
        const resumed = new ChangeReader(store.changes.watch(scope, COLLECTION, { after: seen[1]!.token }));
        try {
          const replayed = await resumed.take(2);
          expect(replayed.map((e) => e.documentId)).to.deep.equal([docs[2]!._id, docs[3]!._id]);
          expect(replayed[0]!.document).to.deep.equal(docs[2]);
          await mustCommit(store, scope, [putWrite(docs[4]!)]);
          expect((await resumed.next()).documentId).to.equal(docs[4]!._id);
        } finally {
          resumed.sub.close();
        }
        // Resuming from an earlier token replays from there, again without duplicates.
        const again = new ChangeReader(store.changes.watch(scope, COLLECTION, { after: seen[0]!.token }));
        try {
          const replayed = await again.take(4);
          expect(replayed.map((e) => e.documentId)).to.deep.equal(docs.slice(1).map((d) => d._id));
          const last = firstVersion({ i: 'last' });
          await mustCommit(store, scope, [putWrite(last)]);
          expect((await again.next()).documentId).to.equal(last._id);
        } finally {
          again.sub.close();
        }
      });

      it('resuming after the latest token yields only later events', async () => {
        const scope = newScope();
        const first = new ChangeReader(store.changes.watch(scope, COLLECTION));
        let token: string;
        try {
          await mustCommit(store, scope, [putWrite(firstVersion({}))]);
          token = (await first.next()).token;
        } finally {
          first.sub.close();
        }
        const resumed = new ChangeReader(store.changes.watch(scope, COLLECTION, { after: token }));
        try {
          const later = firstVersion({ later: true });
          await mustCommit(store, scope, [putWrite(later)]);
          expect((await resumed.next()).documentId).to.equal(later._id);
        } finally {
          resumed.sub.close();
        }
      });

      it('keeps one source for all collections and subscribers: sourceCount is 0 or 1', async function () {
        this.timeout(60_000);
        expect(sourceCount(store.changes)).to.equal(0);
        const scopes = [newScope('live'), newScope('test')];
        const collections = Array.from({ length: 100 }, (_, i) => `c${i}`);
        const readers = scopes.flatMap((scope) =>
          collections.map((collection) => ({
            scope,
            collection,
            reader: new ChangeReader(store.changes.watch(scope, collection)),
          })),
        );
        const twin = new ChangeReader(store.changes.watch(scopes[0]!, 'c7'));
        try {
          expect(sourceCount(store.changes)).to.equal(1);
          await Promise.all(readers.map(({ reader }) => reader.sub.ready));
          // One write to a few of the 200 watched collections: each reaches its own readers only.
          const picked = [readers[0]!, readers[7]!, readers[150]!];
          const written = new Map<ChangeReader, FolioDocument>();
          for (const { scope, collection, reader } of picked) {
            const doc = firstVersion({ collection });
            expect(await store.documents.commit(scope, collection, [putWrite(doc)])).to.deep.equal({
              ok: true,
            });
            written.set(reader, doc);
          }
          for (const [reader, doc] of written) {
            const event = await reader.next();
            expect(event.documentId).to.equal(doc._id);
            expect(event.collection).to.equal(doc.collection);
          }
          expect((await twin.next()).documentId).to.equal(written.get(readers[7]!.reader)!._id);
          // A reader of another collection got nothing: its next event is a later write of its own.
          const quiet = readers[1]!;
          const own = firstVersion({});
          await store.documents.commit(quiet.scope, quiet.collection, [putWrite(own)]);
          expect((await quiet.reader.next()).documentId).to.equal(own._id);
        } finally {
          for (const { reader } of readers) reader.sub.close();
          twin.sub.close();
        }
        // The source closes with its last subscriber.
        expect(sourceCount(store.changes)).to.equal(0);
      });

      it('watchAll delivers every scope and collection in commit order, each event with its scope', async () => {
        const a = newScope('live');
        const b = newScope('test');
        const all = new ChangeReader(store.changes.watchAll());
        try {
          await all.sub.ready;
          const docs = [firstVersion({ i: 0 }), firstVersion({ i: 1 }), firstVersion({ i: 2 })];
          await mustCommit(store, a, [putWrite(docs[0]!)]);
          expect(await store.documents.commit(b, 'elsewhere', [putWrite(docs[1]!)])).to.deep.equal({
            ok: true,
          });
          await mustCommit(store, a, [putWrite(docs[2]!)]);
          const events = await all.take(3);
          expect(events.map((e) => [e.scope, e.collection, e.documentId])).to.deep.equal([
            [a, COLLECTION, docs[0]!._id],
            [b, 'elsewhere', docs[1]!._id],
            [a, COLLECTION, docs[2]!._id],
          ]);
          expect(sourceCount(store.changes)).to.equal(1);
        } finally {
          all.sub.close();
        }
      });

      it('watchAll resumes after a token across scopes and collections, then continues live', async () => {
        const a = newScope('live');
        const b = newScope('test');
        const first = new ChangeReader(store.changes.watchAll());
        let token: string;
        try {
          await first.sub.ready;
          await mustCommit(store, a, [putWrite(firstVersion({}))]);
          token = (await first.next()).token;
        } finally {
          first.sub.close();
        }
        const missed = [firstVersion({ m: 1 }), firstVersion({ m: 2 })];
        await mustCommit(store, b, [putWrite(missed[0]!)]);
        expect(await store.documents.commit(a, 'other', [putWrite(missed[1]!)])).to.deep.equal({ ok: true });
        const resumed = new ChangeReader(store.changes.watchAll({ after: token }));
        try {
          const replayed = await resumed.take(2);
          expect(replayed.map((e) => [e.scope, e.documentId])).to.deep.equal([
            [b, missed[0]!._id],
            [a, missed[1]!._id],
          ]);
          const live = firstVersion({ live: true });
          await mustCommit(store, b, [putWrite(live)]);
          expect((await resumed.next()).documentId).to.equal(live._id);
        } finally {
          resumed.sub.close();
        }
      });

      it('closes a catch-up read as soon as it has caught up, without waiting for a write', async () => {
        const scope = newScope();
        const first = new ChangeReader(store.changes.watch(scope, COLLECTION));
        let token: string;
        try {
          await first.sub.ready;
          await mustCommit(store, scope, [putWrite(firstVersion({}))]);
          token = (await first.next()).token;
        } finally {
          first.sub.close();
        }
        const missed = firstVersion({ missed: true });
        await mustCommit(store, scope, [putWrite(missed)]);
        const resumed = new ChangeReader(store.changes.watch(scope, COLLECTION, { after: token }));
        try {
          expect((await resumed.next()).documentId).to.equal(missed._id);
          await until(() => catchUpCount(store.changes) === 0, 'the catch-up read to close');
          expect(sourceCount(store.changes)).to.equal(1);
          // Live from the shared source now, without a duplicate of what was replayed.
          const live = firstVersion({ live: true });
          await mustCommit(store, scope, [putWrite(live)]);
          expect((await resumed.next()).documentId).to.equal(live._id);
        } finally {
          resumed.sub.close();
        }
        expect(catchUpCount(store.changes)).to.equal(0);
      });

      it('ends a resume from a malformed token with invalid_token, before ready', async () => {
        for (const after of ['not a token', 'evt_', '-1', '']) {
          const sub = store.changes.watch(newScope(), COLLECTION, { after });
          await sub.ready;
          expect(sub.endedBy, after).to.equal('invalid_token');
          await new ChangeReader(sub).ended();
          const all = store.changes.watchAll({ after });
          await all.ready;
          expect(all.endedBy, after).to.equal('invalid_token');
        }
        expect(sourceCount(store.changes)).to.equal(0);
      });

      it('ends a subscriber that falls more than bufferLimit events behind with overflow, and only then', async () => {
        const scope = newScope();
        const probe = new ChangeReader(store.changes.watch(scope, COLLECTION));
        const limited = new ChangeReader(store.changes.watch(scope, COLLECTION, { bufferLimit: 3 }));
        try {
          await Promise.all([probe.sub.ready, limited.sub.ready]);
          const batch = (n: number) => Array.from({ length: n }, (_, i) => firstVersion({ i }));
          const three = batch(3);
          await mustCommit(
            store,
            scope,
            three.map((d) => putWrite(d)),
          );
          // The probe has them: the limited subscriber holds all three, untaken, and still runs.
          await probe.take(3);
          expect(limited.sub.endedBy).to.equal(null);
          expect((await limited.take(3)).map((e) => e.documentId)).to.deep.equal(three.map((d) => d._id));
          const four = batch(4);
          await mustCommit(
            store,
            scope,
            four.map((d) => putWrite(d)),
          );
          await probe.take(4);
          expect(limited.sub.endedBy).to.equal('overflow');
          // It ends at once: undelivered events are dropped (resume after the last token taken).
          await limited.ended();
        } finally {
          probe.sub.close();
          limited.sub.close();
        }
      });

      it('finishes the iterator on close(), idempotently, without endedBy', async () => {
        const reader = new ChangeReader(store.changes.watch(newScope(), COLLECTION));
        reader.sub.close();
        reader.sub.close();
        await reader.ended();
        expect(reader.sub.endedBy).to.equal(null);
      });

      it('ends open subscriptions with store_closed when the store closes', async () => {
        const own = await factory.create();
        let reader: ChangeReader | undefined;
        try {
          reader = new ChangeReader(own.changes.watch(newScope(), COLLECTION));
        } finally {
          await factory.destroy(own);
        }
        await reader!.ended();
        expect(reader!.sub.endedBy).to.equal('store_closed');
      });
    });

    describe('accounts', () => {
      const account = (email: string) => ({
        id: newId('acc'),
        email,
        passwordHash: 'scrypt$abc',
        plan: 'free' as const,
        createdAt: isoNow(),
      });

      it('creates, reads and re-plans an account, and counts accounts', async () => {
        const before = await store.accounts.countAccounts();
        const acc = account(`${newId('acc').toLowerCase()}@example.com`);
        await store.accounts.createAccount(acc);
        expect(await store.accounts.getAccount(acc.id)).to.deep.equal(acc);
        expect(await store.accounts.countAccounts()).to.equal(before + 1);
        await store.accounts.setPlan(acc.id, 'team');
        expect((await store.accounts.getAccount(acc.id))!.plan).to.equal('team');
        expect(await store.accounts.getAccount(newId('acc'))).to.equal(null);
      });

      it('finds accounts by email regardless of case and refuses a duplicate email in any case', async () => {
        const local = newId('acc').toLowerCase();
        const acc = account(`${local}@example.com`);
        await store.accounts.createAccount(acc);
        expect((await store.accounts.findAccountByEmail(`${local.toUpperCase()}@EXAMPLE.com`))!.id).to.equal(
          acc.id,
        );
        expect(await store.accounts.findAccountByEmail(`x${local}@example.com`)).to.equal(null);
        const before = await store.accounts.countAccounts();
        const dup = account(`${local.toUpperCase()}@Example.COM`);
        const error = await store.accounts.createAccount(dup).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(DuplicateError);
        expect((error as DuplicateError).field).to.equal('email');
        expect(await store.accounts.countAccounts()).to.equal(before);
        expect(await store.accounts.getAccount(dup.id)).to.equal(null);
      });

      it('returns a session until it expires, and never after deletion', async () => {
        const start = Date.now();
        const session = {
          tokenHash: newId('req').toLowerCase(),
          accountId: newId('acc'),
          createdAt: isoNow(start),
          expiresAt: isoNow(start + 60_000),
        };
        await store.accounts.createSession(session);
        expect(await store.accounts.findSession(session.tokenHash, isoNow(start + 1))).to.deep.equal(session);
        expect(await store.accounts.findSession(session.tokenHash, isoNow(start + 59_999))).to.deep.equal(
          session,
        );
        expect(await store.accounts.findSession(session.tokenHash, isoNow(start + 60_001))).to.equal(null);
        expect(await store.accounts.findSession(newId('req'), isoNow(start))).to.equal(null);
        await store.accounts.deleteSession(session.tokenHash);
        expect(await store.accounts.findSession(session.tokenHash, isoNow(start + 1))).to.equal(null);
      });

      it('creates, finds and lists projects; a name is unique within its account only', async () => {
        const accountId = newId('acc');
        const p1 = { id: newId('prj'), accountId, name: 'shop', createdAt: isoNow(), allowedOrigins: null };
        const p2 = {
          id: newId('prj'),
          accountId,
          name: 'blog',
          createdAt: isoNow(),
          allowedOrigins: ['https://a.example'],
        };
        await store.accounts.createProject(p1);
        await store.accounts.createProject(p2);
        expect(await store.accounts.getProject(p1.id)).to.deep.equal(p1);
        expect(await store.accounts.findProject(accountId, 'blog')).to.deep.equal(p2);
        expect(await store.accounts.findProject(accountId, 'nope')).to.equal(null);
        expect(await store.accounts.getProject(newId('prj'))).to.equal(null);
        const listed = await store.accounts.listProjects(accountId);
        expect(listed).to.have.deep.members([p1, p2]);
        expect(listed).to.have.length(2);
        const error = await store.accounts
          .createProject({
            id: newId('prj'),
            accountId,
            name: 'shop',
            createdAt: isoNow(),
            allowedOrigins: null,
          })
          .then(
            () => null,
            (e: unknown) => e,
          );
        expect(error).to.be.instanceOf(DuplicateError);
        expect((error as DuplicateError).field).to.equal('name');
        await store.accounts.createProject({
          id: newId('prj'),
          accountId: newId('acc'),
          name: 'shop',
          createdAt: isoNow(),
          allowedOrigins: null,
        });
        expect(await store.accounts.listProjects(accountId)).to.have.length(2);
      });

      it('replaces a project’s allowed origins, and null restores the default policy', async () => {
        const project = {
          id: newId('prj'),
          accountId: newId('acc'),
          name: 'web',
          createdAt: isoNow(),
          allowedOrigins: null,
        };
        await store.accounts.createProject(project);
        await store.accounts.setAllowedOrigins(project.id, ['https://a.example', 'http://localhost:5173']);
        expect((await store.accounts.getProject(project.id))?.allowedOrigins).to.deep.equal([
          'https://a.example',
          'http://localhost:5173',
        ]);
        await store.accounts.setAllowedOrigins(project.id, []);
        expect((await store.accounts.getProject(project.id))?.allowedOrigins).to.deep.equal([]);
        await store.accounts.setAllowedOrigins(project.id, null);
        expect((await store.accounts.getProject(project.id))?.allowedOrigins).to.equal(null);
      });

      it('keeps a project’s automatic-index switch: absent until set, false, true, back to the default', async () => {
        const project = {
          id: newId('prj'),
          accountId: newId('acc'),
          name: 'auto',
          createdAt: isoNow(),
          allowedOrigins: null,
        };
        await store.accounts.createProject(project);
        expect(await store.accounts.getProject(project.id)).to.deep.equal(project);
        await store.accounts.setAutoIndexes(project.id, false);
        expect((await store.accounts.getProject(project.id))?.autoIndexes).to.equal(false);
        await store.accounts.setAutoIndexes(project.id, true);
        expect((await store.accounts.listProjects(project.accountId))[0]?.autoIndexes).to.equal(true);
        await store.accounts.setAutoIndexes(project.id, null);
        expect(await store.accounts.getProject(project.id)).to.deep.equal(project);
      });
    });

    describe('api keys', () => {
      it('stores a key and finds it by id and by hash, config included', async () => {
        const key = apiKey(newId('prj'));
        await store.accounts.createKey(key, 100);
        expect(await store.accounts.getKey(key.id)).to.deep.equal(key);
        expect(await store.accounts.findKeyByHash(key.keyHash)).to.deep.equal(key);
        expect(await store.accounts.findKeyByHash('unknown')).to.equal(null);
        expect(await store.accounts.getKey(newId('key'))).to.equal(null);
      });

      it('refuses a second key with the same hash', async () => {
        const projectId = newId('prj');
        const key = apiKey(projectId);
        await store.accounts.createKey(key, 100);
        const error = await store.accounts.createKey(apiKey(projectId, { keyHash: key.keyHash }), 100).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(DuplicateError);
        expect((error as DuplicateError).field).to.equal('keyHash');
        expect(await store.accounts.listKeys(projectId)).to.have.length(1);
      });

      it('lists a project’s keys newest first and counts the active ones', async () => {
        const projectId = newId('prj');
        const t = Date.now();
        const k1 = apiKey(projectId, { createdAt: isoNow(t - 2000) });
        const k2 = apiKey(projectId, { createdAt: isoNow(t - 1000), env: 'live', scope: 'read-only' });
        const k3 = apiKey(projectId, { createdAt: isoNow(t) });
        for (const k of [k2, k3, k1]) await store.accounts.createKey(k, 100);
        await store.accounts.createKey(apiKey(newId('prj')), 100);
        expect((await store.accounts.listKeys(projectId)).map((k) => k.id)).to.deep.equal([
          k3.id,
          k2.id,
          k1.id,
        ]);
        expect(await store.accounts.countActiveKeys(projectId)).to.equal(3);
        expect(await store.accounts.revokeKey(k2.id, isoNow())).to.equal(true);
        expect(await store.accounts.countActiveKeys(projectId)).to.equal(2);
      });

      it('creates keys up to the maximum of active ones, even when creates race; revoked ones free a place', async () => {
        const projectId = newId('prj');
        const results = await Promise.all(
          Array.from({ length: 8 }, () => store.accounts.createKey(apiKey(projectId), 3)),
        );
        expect(results.filter(Boolean)).to.have.length(3);
        expect(await store.accounts.countActiveKeys(projectId)).to.equal(3);
        expect(await store.accounts.createKey(apiKey(projectId), 3)).to.equal(false);
        expect(await store.accounts.createKey(apiKey(newId('prj')), 3)).to.equal(true);
        const [first] = await store.accounts.listKeys(projectId);
        await store.accounts.revokeKey(first!.id, isoNow());
        expect(await store.accounts.createKey(apiKey(projectId), 3)).to.equal(true);
        expect(await store.accounts.createKey(apiKey(projectId), 3)).to.equal(false);
      });

      it('revokes an active key once', async () => {
        const key = apiKey(newId('prj'));
        await store.accounts.createKey(key, 100);
        const at = isoNow();
        expect(await store.accounts.revokeKey(key.id, at)).to.equal(true);
        expect(await store.accounts.getKey(key.id)).to.deep.equal({
          ...key,
          status: 'revoked',
          revokedAt: at,
        });
        expect(await store.accounts.revokeKey(key.id, isoNow())).to.equal(false);
        expect((await store.accounts.getKey(key.id))!.revokedAt).to.equal(at);
        expect(await store.accounts.revokeKey(newId('key'), isoNow())).to.equal(false);
      });

      it('rotates a key: the old one revoked, the replacement active, in one step', async () => {
        const projectId = newId('prj');
        const old = apiKey(projectId);
        await store.accounts.createKey(old, 100);
        const at = isoNow();
        const replacement = apiKey(projectId, { rotatedFrom: old.id, createdAt: at });
        expect(await store.accounts.rotateKey(old.id, replacement, at)).to.equal(true);
        expect(await store.accounts.getKey(old.id)).to.deep.equal({
          ...old,
          status: 'revoked',
          revokedAt: at,
        });
        expect(await store.accounts.getKey(replacement.id)).to.deep.equal(replacement);
        expect(await store.accounts.countActiveKeys(projectId)).to.equal(1);
      });

      it('does not rotate a key that is not active, and inserts no replacement', async () => {
        const projectId = newId('prj');
        const old = apiKey(projectId);
        await store.accounts.createKey(old, 100);
        await store.accounts.revokeKey(old.id, isoNow());
        const replacement = apiKey(projectId, { rotatedFrom: old.id });
        expect(await store.accounts.rotateKey(old.id, replacement, isoNow())).to.equal(false);
        expect(await store.accounts.getKey(replacement.id)).to.equal(null);
        expect(await store.accounts.rotateKey(newId('key'), apiKey(projectId), isoNow())).to.equal(false);
      });

      it('leaves the old key active when the replacement cannot be inserted', async () => {
        const projectId = newId('prj');
        const old = apiKey(projectId);
        const other = apiKey(projectId);
        await store.accounts.createKey(old, 100);
        await store.accounts.createKey(other, 100);
        const clash = apiKey(projectId, { keyHash: other.keyHash, rotatedFrom: old.id });
        const error = await store.accounts.rotateKey(old.id, clash, isoNow()).then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).to.be.instanceOf(DuplicateError);
        expect(await store.accounts.getKey(old.id)).to.deep.equal(old);
        expect(await store.accounts.getKey(clash.id)).to.equal(null);
      });

      it('keeps a key’s rules as given; setKeyRules replaces them on an active key only', async () => {
        const rules = [
          { collections: ['posts', 'public_*'], access: 'read' as const, filter: { n: { gte: 3 } } },
        ];
        const key = apiKey(newId('prj'), { rules });
        await store.accounts.createKey(key, 100);
        expect((await store.accounts.findKeyByHash(key.keyHash))!.rules).to.deep.equal(rules);
        expect(await store.accounts.setKeyRules(key.id, null)).to.equal(true);
        expect((await store.accounts.getKey(key.id))!.rules).to.equal(null);
        expect(await store.accounts.setKeyRules(key.id, [{ collections: ['a'], access: 'write' }])).to.equal(
          true,
        );
        expect((await store.accounts.listKeys(key.projectId))[0]!.rules).to.deep.equal([
          { collections: ['a'], access: 'write' },
        ]);
        await store.accounts.revokeKey(key.id, isoNow());
        expect(await store.accounts.setKeyRules(key.id, null)).to.equal(false);
        expect(await store.accounts.setKeyRules(newId('key'), null)).to.equal(false);
      });

      it('stamps the last use of a key', async () => {
        const key = apiKey(newId('prj'));
        await store.accounts.createKey(key, 100);
        const at = isoNow();
        await store.accounts.touchKey(key.id, at);
        expect((await store.accounts.getKey(key.id))!.lastUsedAt).to.equal(at);
      });
    });

    describe('stream slots', () => {
      it('hands out at most max slots per holder, frees one at once on release, idempotently', async () => {
        const holder = newId('key');
        const slots = store.streamSlots;
        for (let i = 0; i < 3; i++) expect(await slots.acquire(holder, `s${i}`, 3, 60_000)).to.equal(true);
        expect(await slots.acquire(holder, 's3', 3, 60_000)).to.equal(false);
        // Another holder has its own slots.
        expect(await slots.acquire(newId('key'), 's3', 3, 60_000)).to.equal(true);
        await slots.release(holder, 's1');
        await slots.release(holder, 's1');
        expect(await slots.acquire(holder, 's3', 3, 60_000)).to.equal(true);
        expect(await slots.acquire(holder, 's4', 3, 60_000)).to.equal(false);
      });

      it('renews a held slot and reports one that is gone', async () => {
        const holder = newId('key');
        expect(await store.streamSlots.acquire(holder, 'a', 1, 60_000)).to.equal(true);
        expect(await store.streamSlots.renew(holder, 'a', 60_000)).to.equal(true);
        await store.streamSlots.release(holder, 'a');
        expect(await store.streamSlots.renew(holder, 'a', 60_000)).to.equal(false);
      });

      it('never hands out more than max to concurrent takers', async () => {
        const holder = newId('key');
        const taken = await Promise.all(
          Array.from({ length: 12 }, (_, i) => store.streamSlots.acquire(holder, `s${i}`, 5, 60_000)),
        );
        expect(taken.filter(Boolean)).to.have.length(5);
      });
    });

    describe('counters', () => {
      it('counts hits in a window that opens at the first hit and lasts windowMs', async () => {
        const key = `rate:${newId('key')}`;
        const t0 = 1_700_000_000_000;
        for (let i = 1; i <= 5; i++) {
          expect(await store.counters.hit(key, 1000, t0 + (i - 1) * 100)).to.deep.equal({
            count: i,
            resetAtMs: t0 + 1000,
          });
        }
        expect(await store.counters.hit(key, 1000, t0 + 999)).to.deep.equal({
          count: 6,
          resetAtMs: t0 + 1000,
        });
        // The next hit at or after the reset time opens a new window.
        expect(await store.counters.hit(key, 1000, t0 + 1000)).to.deep.equal({
          count: 1,
          resetAtMs: t0 + 2000,
        });
        expect(await store.counters.hit(key, 1000, t0 + 5000)).to.deep.equal({
          count: 1,
          resetAtMs: t0 + 6000,
        });
      });

      it('counts each key on its own', async () => {
        const t0 = 1_700_000_000_000;
        const a = `rate:${newId('key')}`;
        const b = `rate:${newId('key')}`;
        await store.counters.hit(a, 1000, t0);
        await store.counters.hit(a, 1000, t0 + 1);
        expect((await store.counters.hit(b, 1000, t0 + 2)).count).to.equal(1);
      });

      it('counts every one of concurrent hits exactly once', async () => {
        const key = `rate:${newId('key')}`;
        const t0 = Date.now();
        const results = await Promise.all(
          Array.from({ length: 30 }, () => store.counters.hit(key, 60_000, t0)),
        );
        expect(results.map((r) => r.count).sort((x, y) => x - y)).to.deep.equal(
          Array.from({ length: 30 }, (_, i) => i + 1),
        );
      });
    });
  });
}
