/**
 * The port's `listCollections`, on every available store: the scope's collections that hold
 * documents, by name, with exact counts; never another scope's; emptied collections not listed.
 */
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import type { DataScope, Store } from '../../src/store/port.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { embeddedFactory } from './embeddedFactory.js';
import type { StoreFactory } from './factories.js';
import { firstVersion, putWrite } from './fixtures.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];

async function create(store: Store, scope: DataScope, collection: string, count: number) {
  const docs = Array.from({ length: count }, (_, n) => firstVersion({ n }));
  const result = await store.documents.commit(
    scope,
    collection,
    docs.map((doc) => putWrite(doc)),
  );
  expect(result).to.deep.equal({ ok: true });
  return docs;
}

for (const factory of factories) {
  describe(`store listCollections: ${factory.name}`, () => {
    let store: Store;
    before(async () => {
      store = await factory.create();
    });
    after(async () => {
      if (store) await factory.destroy(store);
    });

    it('lists the collections holding documents, by name in code-unit order, with exact counts', async () => {
      const scope: DataScope = { projectId: newId('prj'), env: 'test' };
      await create(store, scope, 'notes', 3);
      await create(store, scope, 'Zebra', 1);
      await create(store, scope, 'a-b_c', 2);
      await create(store, scope, '9lives', 1);
      expect(await store.documents.listCollections(scope)).to.deep.equal([
        { name: '9lives', documents: 1 },
        { name: 'Zebra', documents: 1 },
        { name: 'a-b_c', documents: 2 },
        { name: 'notes', documents: 3 },
      ]);
    });

    it("never lists another scope's collections (other project, other environment)", async () => {
      const projectId = newId('prj');
      const live: DataScope = { projectId, env: 'live' };
      const test: DataScope = { projectId, env: 'test' };
      const other: DataScope = { projectId: newId('prj'), env: 'test' };
      await create(store, live, 'orders', 2);
      await create(store, other, 'secrets', 1);
      expect(await store.documents.listCollections(test)).to.deep.equal([]);
      expect(await store.documents.listCollections(live)).to.deep.equal([{ name: 'orders', documents: 2 }]);
    });

    it('a collection whose documents were all deleted is not listed; one document left keeps it', async () => {
      const scope: DataScope = { projectId: newId('prj'), env: 'test' };
      const docs = await create(store, scope, 'temp', 2);
      const remove = (id: string) =>
        store.documents.commit(scope, 'temp', [{ kind: 'delete', id, expectedVersion: 1 }]);
      expect(await remove(docs[0]!._id)).to.deep.equal({ ok: true });
      expect(await store.documents.listCollections(scope)).to.deep.equal([{ name: 'temp', documents: 1 }]);
      expect(await remove(docs[1]!._id)).to.deep.equal({ ok: true });
      expect(await store.documents.listCollections(scope)).to.deep.equal([]);
    });
  });
}
