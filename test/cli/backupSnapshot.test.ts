/**
 * The port's SnapshotRepository on each available store (embedded always, MongoDB where one
 * runs): a read is one point in time even when writes commit between two of its steps; what it
 * reads, written into an empty store, reads back the same; `isEmpty` at its edges; writing a
 * batch twice changes nothing. Collection schemas and trash entries (with their history) travel
 * too; a trash entry already expired when the read starts does not.
 */
import { expect } from 'chai';
import type { SnapshotRecord, Store } from '../../src/store/port.js';
import { embeddedFactory } from '../store/embeddedFactory.js';
import type { StoreFactory } from '../store/factories.js';
import { firstVersion, nextVersion, putWrite } from '../store/fixtures.js';
import { mongoStoreFactories } from '../support/mongodb.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];
const scope = { projectId: 'prj_01J00000000000000000000SNP', env: 'test' as const };
const SCHEMA = {
  // Text kept byte for byte: spacing, key order and `$` keys included.
  schema: '{ "type":"object", "$comment":"kept as is",\n "properties": {"n": {"type": "integer"}}}',
  mode: 'enforce' as const,
  revision: 'sch_01J0000000000000000000SNAP',
  updatedAt: '2026-02-01T00:00:00.000Z',
};
const FAR = '2099-01-01T00:00:00.000Z';
const ACCOUNT = {
  id: 'acc_snap',
  email: 'Snap@Example.test',
  passwordHash: 'scrypt$x',
  plan: 'pro' as const,
  createdAt: '2026-01-01T00:00:00.000Z',
};

async function readAll(store: Store): Promise<SnapshotRecord[]> {
  const records: SnapshotRecord[] = [];
  for await (const record of store.snapshots.read()) records.push(record);
  return records;
}

/** Records in a store-independent order, as text. */
function comparable(records: SnapshotRecord[]): string[] {
  return records
    .map((r) => (r.type === 'index' ? { ...r, index: { ...r.index, createdAt: '' } } : r))
    .map((r) => JSON.stringify(r))
    .sort();
}

for (const factory of factories) {
  describe(`SnapshotRepository [${factory.name}]`, function () {
    this.timeout(60_000);
    let store: Store;
    let other: Store | undefined;

    beforeEach(async () => {
      store = await factory.create();
    });
    afterEach(async () => {
      await factory.destroy(store);
      if (other) await factory.destroy(other);
      other = undefined;
    });

    async function seed(): Promise<void> {
      await store.accounts.createAccount(ACCOUNT);
      await store.accounts.createProject({
        id: scope.projectId,
        accountId: ACCOUNT.id,
        name: 'snap',
        createdAt: ACCOUNT.createdAt,
        allowedOrigins: null,
      });
      for (let i = 0; i < 20; i++) {
        const doc = firstVersion({ n: i, '7': 'seven', nested: { b: 1, a: [2.5] } }, `d${i}`);
        expect(await store.documents.commit(scope, 'items', [putWrite(doc)])).to.deep.equal({ ok: true });
      }
      const d1 = (await store.documents.get(scope, 'items', 'd1'))!;
      await store.documents.commit(scope, 'items', [putWrite(nextVersion(d1, { n: 100 }))]);
      await store.indexes.create(
        scope,
        'items',
        { name: 'n_1', fields: [{ path: 'n', order: 1 }], unique: true },
        10,
      );
      await store.schemas.put(scope, 'items', SCHEMA);
      await store.schemas.put(scope, 'empty', { ...SCHEMA, mode: 'warn', schema: 'true' });
      // Into the trash: d2 with a history of two versions (live), d5 already expired.
      const d2 = (await store.documents.get(scope, 'items', 'd2'))!;
      await store.documents.commit(scope, 'items', [putWrite(nextVersion(d2, { n: 200, gone: true }))]);
      await trash('d2', {
        deletedAt: '2026-03-01T00:00:00.000Z',
        apiKeyHint: 'folio_sk_test_...trsh',
        expiresAt: FAR,
      });
      await trash('d5', {
        deletedAt: '2026-03-01T00:00:00.000Z',
        apiKeyHint: 'folio_sk_test_...trsh',
        expiresAt: '2026-03-02T00:00:00.000Z',
      });
    }

    async function trash(id: string, stamp: { deletedAt: string; apiKeyHint: string; expiresAt: string }) {
      const doc = (await store.documents.get(scope, 'items', id))!;
      expect(
        await store.documents.commit(scope, 'items', [
          { kind: 'delete', id, expectedVersion: doc.$version, trash: stamp },
        ]),
      ).to.deep.equal({ ok: true });
    }

    it('isEmpty: true for a new store, false once it holds one account', async () => {
      expect(await store.snapshots.isEmpty()).to.equal(true);
      await store.accounts.createAccount(ACCOUNT);
      expect(await store.snapshots.isEmpty()).to.equal(false);
    });

    it('isEmpty: false for a store holding only a schema, or only a trash entry', async () => {
      await store.schemas.put(scope, 'items', SCHEMA);
      expect(await store.snapshots.isEmpty()).to.equal(false);
      await store.schemas.delete(scope, 'items');
      expect(await store.snapshots.isEmpty()).to.equal(true);
      const document = firstVersion({ n: 1 }, 't1');
      const entry = { id: 't1', deletedAt: FAR, apiKeyHint: 'h', expiresAt: FAR, document };
      await store.snapshots.write([{ type: 'trashedDocument', scope, collection: 'items', entry }]);
      expect(await store.snapshots.isEmpty()).to.equal(false);
      other = await factory.create();
      await other.snapshots.write([
        { type: 'trashedDocument', scope, collection: 'items', entry },
        {
          type: 'trashedVersion',
          scope,
          collection: 'items',
          id: 't1',
          version: { version: 1, operation: 'create', timestamp: FAR, apiKeyHint: 'h' },
          document,
        },
      ]);
      await other.trash.purge(scope, 'items', 't1');
      // The history went with its entry: nothing is left.
      expect(await other.snapshots.isEmpty()).to.equal(true);
    });

    it('reads one point in time: writes committed while the read is under way are not in it', async () => {
      await seed();
      const before = await readAll(store);
      const iterator = store.snapshots.read()[Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.done).to.equal(false);
      // Between two steps of the read: a new document, an update, a delete, a delete into the
      // trash, a purge from it, a changed and a new schema, a new account.
      const d3 = (await store.documents.get(scope, 'items', 'd3'))!;
      const d4 = (await store.documents.get(scope, 'items', 'd4'))!;
      const d6 = (await store.documents.get(scope, 'items', 'd6'))!;
      expect(
        await store.documents.commit(scope, 'items', [
          putWrite(firstVersion({ n: 999 }, 'late')),
          putWrite(nextVersion(d3, { n: 300 })),
          { kind: 'delete', id: d4._id, expectedVersion: d4.$version },
          {
            kind: 'delete',
            id: d6._id,
            expectedVersion: d6.$version,
            trash: { deletedAt: FAR, apiKeyHint: 'h', expiresAt: FAR },
          },
        ]),
      ).to.deep.equal({ ok: true });
      expect(await store.trash.purge(scope, 'items', 'd2')).to.equal(true);
      await store.schemas.put(scope, 'items', { ...SCHEMA, mode: 'warn', revision: 'sch_late' });
      await store.schemas.put(scope, 'late', SCHEMA);
      await store.accounts.createAccount({ ...ACCOUNT, id: 'acc_late', email: 'late@example.test' });
      const records = [first.value as SnapshotRecord];
      for (let next = await iterator.next(); !next.done; next = await iterator.next())
        records.push(next.value);
      expect(records.map((r) => JSON.stringify(r))).to.deep.equal(before.map((r) => JSON.stringify(r)));
      // And the writes did land: a new read sees them.
      const after = await readAll(store);
      expect(after.some((r) => r.type === 'document' && r.document._id === 'late')).to.equal(true);
      expect(after.some((r) => r.type === 'trashedDocument' && r.entry.id === 'd6')).to.equal(true);
      expect(after.some((r) => r.type === 'trashedDocument' && r.entry.id === 'd2')).to.equal(false);
      expect(after.filter((r) => r.type === 'schema').map((r) => r.collection)).to.have.members([
        'empty',
        'items',
        'late',
      ]);
    });

    it('holds schemas and live trash entries, each entry before its history; an expired entry is left out', async () => {
      await seed();
      const records = await readAll(store);
      const schemas = records.filter((r) => r.type === 'schema');
      expect(schemas).to.deep.equal([
        { type: 'schema', scope, collection: 'empty', schema: { ...SCHEMA, mode: 'warn', schema: 'true' } },
        { type: 'schema', scope, collection: 'items', schema: SCHEMA },
      ]);
      const trashed = records.flatMap((r, at) =>
        r.type === 'trashedDocument' || r.type === 'trashedVersion' ? [{ r, at }] : [],
      );
      expect(trashed.map(({ r }) => r.type)).to.deep.equal([
        'trashedDocument',
        'trashedVersion',
        'trashedVersion',
      ]);
      const [entry, v1, v2] = trashed.map(({ r }) => r);
      expect(entry).to.deep.equal({
        type: 'trashedDocument',
        scope,
        collection: 'items',
        entry: await store.trash.get(scope, 'items', 'd2', '2026-03-01T00:00:00.000Z'),
      });
      expect(v1).to.include({ id: 'd2' });
      expect(v2).to.deep.include({
        id: 'd2',
        version: { ...(v2 as { version: object }).version, version: 2 },
      });
      expect((v2 as { document: object }).document).to.deep.equal(
        (entry as { entry: { document: object } }).entry.document,
      );
      // The expired entry is in the store (not swept yet) but not in the snapshot.
      expect(await store.trash.get(scope, 'items', 'd5', '2026-03-01T12:00:00.000Z')).to.not.equal(null);
      expect(JSON.stringify(records)).to.not.include('"d5"');
    });

    it('leaving the read early releases it', async () => {
      await seed();
      for await (const _ of store.snapshots.read()) break;
      // A write after an abandoned read neither waits nor fails.
      expect(
        await store.documents.commit(scope, 'items', [putWrite(firstVersion({}, 'after'))]),
      ).to.deep.equal({
        ok: true,
      });
    });

    it('written into an empty store, reads back the same; written twice, the same again', async () => {
      await seed();
      const records = await readAll(store);
      other = await factory.create();
      await other.snapshots.write(records.slice(0, 7));
      await other.snapshots.write(records.slice(0, 7));
      await other.snapshots.write(records.slice(7));
      await other.snapshots.write(records.slice(7));
      expect(comparable(await readAll(other))).to.deep.equal(comparable(records));
      // Through the ordinary port: the same document text, history and enforced unique index.
      expect(await other.documents.get(scope, 'items', 'd1')).to.deep.equal(
        await store.documents.get(scope, 'items', 'd1'),
      );
      expect(await other.documents.listVersions(scope, 'items', 'd1')).to.deep.equal(
        await store.documents.listVersions(scope, 'items', 'd1'),
      );
      const clash = firstVersion({ n: 7 }, 'clash');
      await other.documents.commit(scope, 'items', [putWrite(clash)]).then(
        () => expect.fail('the unique index was not rebuilt'),
        (error: Error) => expect(error.name).to.equal('UniqueIndexConflictError'),
      );
      expect((await other.accounts.findAccountByEmail('snap@example.test'))?.id).to.equal(ACCOUNT.id);
      // The schema text byte for byte; the trash entry and its history as the original has them.
      expect(await other.schemas.get(scope, 'items')).to.deep.equal(SCHEMA);
      const at = '2026-06-01T00:00:00.000Z';
      expect(await other.trash.get(scope, 'items', 'd2', at)).to.deep.equal(
        await store.trash.get(scope, 'items', 'd2', at),
      );
      expect(await other.trash.listVersions(scope, 'items', 'd2', at)).to.have.length(2);
      expect(await other.trash.listVersions(scope, 'items', 'd2', at)).to.deep.equal(
        await store.trash.listVersions(scope, 'items', 'd2', at),
      );
      expect(await other.trash.get(scope, 'items', 'd5', '2026-03-01T12:00:00.000Z')).to.equal(null);
    });
  });
}
