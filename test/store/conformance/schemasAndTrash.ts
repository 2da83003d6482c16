/**
 * The port's guarantees for collection schemas and the trash, run by conformance.test.ts against
 * every store (kept in a file of its own so the suite's main file stays readable).
 */
import { expect } from 'chai';
import { isoNow, newId } from '../../../src/ids.js';
import type { DataScope, FolioDocument, Store, TrashStamp } from '../../../src/store/port.js';
import { firstVersion, HINT, nextVersion, putWrite } from '../fixtures.js';

const COLLECTION = 'trashed';
const T0 = Date.parse('2030-01-01T00:00:00.000Z');

function newScope(): DataScope {
  return { projectId: newId('prj'), env: 'test' };
}

function stamp(deletedAtMs: number, retentionMs: number): TrashStamp {
  return { deletedAt: isoNow(deletedAtMs), apiKeyHint: HINT, expiresAt: isoNow(deletedAtMs + retentionMs) };
}

async function ok(store: Store, scope: DataScope, writes: Parameters<Store['documents']['commit']>[2]) {
  const result = await store.documents.commit(scope, COLLECTION, writes);
  expect(result, JSON.stringify(result)).to.deep.equal({ ok: true });
}

/** A document with three versions, committed. */
async function threeVersions(store: Store, scope: DataScope, id = newId('doc')): Promise<FolioDocument> {
  const v1 = firstVersion({ n: 1, secret: `marker-${id}` }, id);
  const v2 = nextVersion(v1, { n: 2 });
  const v3 = nextVersion(v2, { n: 3 });
  for (const v of [v1, v2, v3]) await ok(store, scope, [putWrite(v)]);
  return v3;
}

export function schemaAndTrashConformance(getStore: () => Store): void {
  describe('collection schemas', () => {
    it('are kept per scope and collection, replaced by a put, removed by a delete', async () => {
      const store = getStore();
      const scope = newScope();
      const record = {
        schema: '{"$ref":"#/$defs/a"}',
        mode: 'warn' as const,
        revision: 'r1',
        updatedAt: isoNow(),
      };
      expect(await store.schemas.get(scope, 'a')).to.equal(null);
      await store.schemas.put(scope, 'a', record);
      expect(await store.schemas.get(scope, 'a')).to.deep.equal(record);
      expect(await store.schemas.get(scope, 'b')).to.equal(null);
      expect(await store.schemas.get({ ...scope, env: 'live' }, 'a')).to.equal(null);
      const replaced = { ...record, mode: 'enforce' as const, revision: 'r2' };
      await store.schemas.put(scope, 'a', replaced);
      expect(await store.schemas.get(scope, 'a')).to.deep.equal(replaced);
      expect(await store.schemas.delete(scope, 'a')).to.equal(true);
      expect(await store.schemas.delete(scope, 'a')).to.equal(false);
      expect(await store.schemas.get(scope, 'a')).to.equal(null);
    });
  });

  describe('trash', () => {
    it('a delete with a stamp moves the document and its whole history to the trash', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(T0, 1000) }]);
      expect(await store.documents.get(scope, COLLECTION, doc._id)).to.equal(null);
      expect(await store.documents.listVersions(scope, COLLECTION, doc._id)).to.deep.equal([]);
      const entry = await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0));
      expect(entry).to.deep.equal({ id: doc._id, ...stamp(T0, 1000), document: doc });
      const versions = await store.trash.listVersions(scope, COLLECTION, doc._id, isoNow(T0));
      expect(versions.map((v) => v.version)).to.deep.equal([3, 2, 1]);
      expect(await store.trash.get(newScope(), COLLECTION, doc._id, isoNow(T0))).to.equal(null);
    });

    it('an entry is there until the millisecond before expiresAt, and gone to readers at it', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      const day = 24 * 60 * 60 * 1000;
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(T0, day) }]);
      const at = (ms: number) => isoNow(T0 + ms);
      expect(await store.trash.get(scope, COLLECTION, doc._id, at(day - 1000))).to.not.equal(null);
      expect(await store.trash.get(scope, COLLECTION, doc._id, at(day - 1))).to.not.equal(null);
      expect(await store.trash.get(scope, COLLECTION, doc._id, at(day))).to.equal(null);
      expect(await store.trash.listVersions(scope, COLLECTION, doc._id, at(day))).to.deep.equal([]);
      expect(await store.trash.list(scope, COLLECTION, { limit: 10, now: at(day - 1) })).to.have.length(1);
      expect(await store.trash.list(scope, COLLECTION, { limit: 10, now: at(day) })).to.have.length(0);
    });

    it('purgeExpired erases exactly the entries expired at now (embedded; MongoDB leaves it to its TTL index)', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      // Far in the past, so no other test's entries are older.
      const past = Date.parse('2001-01-01T00:00:00.000Z');
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(past, 1000) }]);
      expect(await store.trash.purgeExpired(isoNow(past + 999), 100)).to.equal(0);
      const erased = await store.trash.purgeExpired(isoNow(past + 1000), 100);
      if (store.kind === 'embedded') expect(erased).to.equal(1);
      expect(await store.trash.get(scope, COLLECTION, doc._id, isoNow(past))).to.equal(null);
    });

    it('lists newest deletion first (ties by id, descending), after a position, up to a limit', async () => {
      const store = getStore();
      const scope = newScope();
      const ids = ['a', 'b', 'c', 'd'];
      for (const id of ids) {
        await threeVersions(store, scope, id);
      }
      // b and c deleted at the same millisecond.
      const times = { a: T0, b: T0 + 1, c: T0 + 1, d: T0 + 2 };
      for (const id of ids) {
        await ok(store, scope, [
          { kind: 'delete', id, expectedVersion: 3, trash: stamp(times[id as keyof typeof times], 60_000) },
        ]);
      }
      const now = isoNow(T0);
      const all = await store.trash.list(scope, COLLECTION, { limit: 10, now });
      expect(all.map((e) => e.id)).to.deep.equal(['d', 'c', 'b', 'a']);
      const page = await store.trash.list(scope, COLLECTION, {
        limit: 2,
        now,
        after: { deletedAt: all[1]!.deletedAt, id: 'c' },
      });
      expect(page.map((e) => e.id)).to.deep.equal(['b', 'a']);
    });

    it('a put from the trash continues the history and empties the entry; conflicts when the id exists or the entry changed', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(T0, 60_000) }]);
      const back: FolioDocument = { ...nextVersion(doc, { n: 3 }), $version: 4 };
      const stale = { ...putWrite({ ...back, $version: 3 }), expectedVersion: 0, fromTrash: true };
      expect(await store.documents.commit(scope, COLLECTION, [stale])).to.deep.equal({
        ok: false,
        conflicts: [{ id: doc._id, currentVersion: null }],
      });
      await ok(store, scope, [
        { ...putWrite(back), expectedVersion: 0, operation: 'restore', fromTrash: true },
      ]);
      expect(await store.documents.get(scope, COLLECTION, doc._id)).to.deep.equal(back);
      const versions = await store.documents.listVersions(scope, COLLECTION, doc._id);
      expect(versions.map((v) => [v.version, v.operation])).to.deep.equal([
        [4, 'restore'],
        [3, 'update'],
        [2, 'update'],
        [1, 'create'],
      ]);
      expect(await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0))).to.equal(null);
      // Trashed again, then the id taken by a new document: a restore conflicts with it.
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 4, trash: stamp(T0, 60_000) }]);
      await ok(store, scope, [putWrite(firstVersion({ fresh: true }, doc._id))]);
      const again = { ...putWrite({ ...back, $version: 5 }), expectedVersion: 0, fromTrash: true };
      expect(await store.documents.commit(scope, COLLECTION, [again])).to.deep.equal({
        ok: false,
        conflicts: [{ id: doc._id, currentVersion: 1 }],
      });
      expect(await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0))).to.not.equal(null);
    });

    it('a second delete of a reused id replaces the older trash entry', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(T0, 60_000) }]);
      await ok(store, scope, [putWrite(firstVersion({ second: true }, doc._id))]);
      await ok(store, scope, [
        { kind: 'delete', id: doc._id, expectedVersion: 1, trash: stamp(T0 + 5, 60_000) },
      ]);
      const entry = await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0));
      expect(entry?.document).to.include({ second: true, $version: 1 });
      const versions = await store.trash.listVersions(scope, COLLECTION, doc._id, isoNow(T0));
      expect(versions.map((v) => v.version)).to.deep.equal([1]);
    });

    it('an erasing delete removes the document, its history and any trash entry of the id; purge erases an entry', async () => {
      const store = getStore();
      const scope = newScope();
      const doc = await threeVersions(store, scope);
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 3, trash: stamp(T0, 60_000) }]);
      await ok(store, scope, [putWrite(firstVersion({ second: true }, doc._id))]);
      // A plain delete (no stamp, no erase) leaves the older trash entry alone.
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 1 }]);
      expect(await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0))).to.not.equal(null);
      await ok(store, scope, [putWrite(firstVersion({ third: true }, doc._id))]);
      await ok(store, scope, [{ kind: 'delete', id: doc._id, expectedVersion: 1, erase: true }]);
      expect(await store.trash.get(scope, COLLECTION, doc._id, isoNow(T0))).to.equal(null);
      expect(await store.documents.listVersions(scope, COLLECTION, doc._id)).to.deep.equal([]);

      const other = await threeVersions(store, scope);
      await ok(store, scope, [
        { kind: 'delete', id: other._id, expectedVersion: 3, trash: stamp(T0, 60_000) },
      ]);
      expect(await store.trash.purge(scope, COLLECTION, other._id)).to.equal(true);
      expect(await store.trash.purge(scope, COLLECTION, other._id)).to.equal(false);
      expect(await store.trash.get(scope, COLLECTION, other._id, isoNow(T0))).to.equal(null);
      expect(await store.trash.listVersions(scope, COLLECTION, other._id, isoNow(T0))).to.deep.equal([]);
    });
  });
}
