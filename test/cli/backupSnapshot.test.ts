/**
 * The port's SnapshotRepository on each available store (embedded always, MongoDB where one
 * runs): a read is one point in time even when writes commit between two of its steps; what it
 * reads, written into an empty store, reads back the same; `isEmpty` at its edges; writing a
 * batch twice changes nothing.
 */
import { expect } from 'chai';
import type { SnapshotRecord, Store } from '../../src/store/port.js';
import { embeddedFactory } from '../store/embeddedFactory.js';
import type { StoreFactory } from '../store/factories.js';
import { firstVersion, nextVersion, putWrite } from '../store/fixtures.js';
import { mongoStoreFactories } from '../support/mongodb.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];
const scope = { projectId: 'prj_01J00000000000000000000SNP', env: 'test' as const };
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
    }

    it('isEmpty: true for a new store, false once it holds one account', async () => {
      expect(await store.snapshots.isEmpty()).to.equal(true);
      await store.accounts.createAccount(ACCOUNT);
      expect(await store.snapshots.isEmpty()).to.equal(false);
    });

    it('reads one point in time: writes committed while the read is under way are not in it', async () => {
      await seed();
      const before = await readAll(store);
      const iterator = store.snapshots.read()[Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.done).to.equal(false);
      // Between two steps of the read: a new document, an update, a delete, a new account.
      const d3 = (await store.documents.get(scope, 'items', 'd3'))!;
      const d4 = (await store.documents.get(scope, 'items', 'd4'))!;
      expect(
        await store.documents.commit(scope, 'items', [
          putWrite(firstVersion({ n: 999 }, 'late')),
          putWrite(nextVersion(d3, { n: 300 })),
          { kind: 'delete', id: d4._id, expectedVersion: d4.$version },
        ]),
      ).to.deep.equal({ ok: true });
      await store.accounts.createAccount({ ...ACCOUNT, id: 'acc_late', email: 'late@example.test' });
      const records = [first.value as SnapshotRecord];
      for (let next = await iterator.next(); !next.done; next = await iterator.next())
        records.push(next.value);
      expect(records.map((r) => JSON.stringify(r))).to.deep.equal(before.map((r) => JSON.stringify(r)));
      // And the writes did land: a new read sees them.
      const after = await readAll(store);
      expect(after.some((r) => r.type === 'document' && r.document._id === 'late')).to.equal(true);
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
      const clash = firstVersion({ n: 5 }, 'clash');
      await other.documents.commit(scope, 'items', [putWrite(clash)]).then(
        () => expect.fail('the unique index was not rebuilt'),
        (error: Error) => expect(error.name).to.equal('UniqueIndexConflictError'),
      );
      expect((await other.accounts.findAccountByEmail('snap@example.test'))?.id).to.equal(ACCOUNT.id);
    });
  });
}
