/**
 * `DocumentRepository.scan`: the streamed twin of `find`, on every available store. Exports
 * stand on it, so it must equal `find` for the same query, stream, release its cursor when the
 * consumer stops early, and never block writers while it is open.
 */
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import { toDriverScan } from '../../src/store/mongodb/documents/documents.js';
import type { DataScope, FindQuery, FolioDocument, Store } from '../../src/store/port.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { embeddedFactory } from './embeddedFactory.js';
import type { StoreFactory } from './factories.js';
import { firstVersion, putWrite } from './fixtures.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];
const COLLECTION = 'scanned';

async function collect(iterable: AsyncIterable<FolioDocument>): Promise<FolioDocument[]> {
  const out: FolioDocument[] = [];
  for await (const doc of iterable) out.push(doc);
  return out;
}

for (const factory of factories) {
  describe(`DocumentRepository.scan [${factory.name}]`, () => {
    let store: Store;
    const scope: DataScope = { projectId: newId('prj'), env: 'test' };
    const N = 600;

    before(async () => {
      store = await factory.create();
      const docs = Array.from({ length: N }, (_, i) =>
        firstVersion({ n: i, group: i % 3, nested: { even: i % 2 === 0 } }),
      );
      const result = await store.documents.commit(
        scope,
        COLLECTION,
        docs.map((doc) => putWrite(doc)),
      );
      expect(result.ok).to.equal(true);
    });
    after(async () => {
      if (store) await factory.destroy(store);
    });

    it('yields exactly what find returns for the same filter, sort, limit and projection', async () => {
      const queries: FindQuery[] = [
        { filter: {}, sort: [['_id', 1]], skip: 0, limit: 0 },
        {
          filter: { group: { $in: [1] } },
          sort: [
            ['n', -1],
            ['_id', -1],
          ],
          skip: 0,
          limit: 0,
        },
        { filter: { 'nested.even': { $in: [true] } }, sort: [['_id', 1]], skip: 5, limit: 17 },
        { filter: {}, sort: [['_id', 1]], skip: 0, limit: 3, projection: ['_id', 'n'] },
      ];
      for (const query of queries) {
        const found = await store.documents.find(scope, COLLECTION, query);
        const scanned = await collect(store.documents.scan(scope, COLLECTION, query));
        expect(scanned, JSON.stringify(query)).to.deep.equal(found);
      }
    });

    it('streams: the first document arrives while writes still succeed, and stopping early releases it', async () => {
      const iterator = store.documents
        .scan(scope, COLLECTION, { filter: {}, sort: [['_id', 1]], skip: 0, limit: 0 })
        [Symbol.asyncIterator]();
      const first = await iterator.next();
      expect(first.done).to.equal(false);
      expect(first.value.n).to.equal(0);
      // A writer is not blocked by the open scan.
      const extra = firstVersion({ n: -1 });
      expect((await store.documents.commit(scope, 'elsewhere', [putWrite(extra)])).ok).to.equal(true);
      await iterator.return?.(undefined);
      // And the store is fully usable after the early stop.
      expect(await store.documents.count(scope, COLLECTION, {})).to.equal(N);
      const again = await collect(
        store.documents.scan(scope, COLLECTION, { filter: {}, sort: [['_id', 1]], skip: 0, limit: 2 }),
      );
      expect(again.map((d) => d.n)).to.deep.equal([0, 1]);
    });

    it('yields nothing for a collection that does not exist', async () => {
      const none = await collect(
        store.documents.scan(scope, 'never_written', { filter: {}, sort: [['_id', 1]], skip: 0, limit: 0 }),
      );
      expect(none).to.deep.equal([]);
    });
  });
}

describe('MongoDB scan arguments', () => {
  it('streams in small batches, lets a large sort spill to disk, and sets no time limit', () => {
    const { filter, options } = toDriverScan({ filter: { a: { $in: [1] } }, sort: [], skip: 0, limit: 0 });
    expect(filter).to.deep.equal({ a: { $in: [1] } });
    expect(options).to.deep.equal({
      sort: [['_id', 1]],
      skip: 0,
      limit: 0,
      maxTimeMS: 0,
      batchSize: 500,
      allowDiskUse: true,
    });
  });
});
