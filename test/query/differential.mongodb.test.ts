/**
 * The query differential on a live MongoDB store (`@mongodb`; skipped with the one SKIPPED line
 * when there is none): the same generated collections and URL queries as differential.test.ts,
 * each collection written into a real MongoDB collection in its stored form, then listed and
 * counted through the store exactly as the service asks (`find`, `count`). The mingo oracle,
 * which the embedded store matches, must agree on matches, order, page, count and selected
 * fields: so the two stores give the same answers.
 *
 * One difference is allowed, MongoDB's own: it refuses to sort on two keys that are both arrays
 * in one document ("parallel arrays"); the store reports that as QueryRejectedError (400 for the
 * client), and the test accepts it only when some matching document has such arrays.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { Query } from 'mingo';
import { newId } from '../../src/ids.js';
import { parseListQuery } from '../../src/query/listQuery.js';
import type { MongoStore } from '../../src/store/mongodb/index.js';
import { projectDbName } from '../../src/store/mongodb/layout/naming.js';
import { type DataScope, type JsonObject, type JsonValue, QueryRejectedError } from '../../src/store/port.js';
import { fromStored } from '../../src/store/storedForm.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { RUNS, SEED, testCase } from './differentialCases.js';
import { oracleFind, toMingoFilter } from './mingoOracle.js';

/** Whether following `path` through `doc` meets an array (where MongoDB's sort keys fan out). */
function meetsArray(doc: JsonValue | undefined, segments: string[]): boolean {
  if (Array.isArray(doc)) return true;
  if (segments.length === 0 || typeof doc !== 'object' || doc === null) return false;
  return meetsArray((doc as JsonObject)[segments[0]!], segments.slice(1));
}

/** Some document meets arrays on two sort paths: MongoDB may refuse the sort. */
function mayHaveParallelArrays(docs: JsonObject[], sort: Array<[string, 1 | -1]>): boolean {
  const paths = sort.map(([path]) => path).filter((path) => path !== '_id');
  return docs.some((doc) => paths.filter((path) => meetsArray(doc, path.split('.'))).length >= 2);
}

for (const factory of await mongoStoreFactories()) {
  describe(`list queries agree with MongoDB semantics on the live store: ${factory.name}`, function () {
    this.timeout(600_000);
    let store: MongoStore;
    const scope: DataScope = { projectId: newId('prj'), env: 'test' };
    const COLLECTION = 'differential';

    before(async () => {
      store = (await factory.create()) as MongoStore;
    });
    after(async () => {
      if (store) await factory.destroy(store);
    });

    it(`${RUNS} generated collections and queries give the oracle's documents, order and count (seed ${SEED})`, async () => {
      const raw = store.client.db(projectDbName(store.dbPrefix, scope)).collection<JsonObject>(COLLECTION);
      let rejected = 0;
      await fc.assert(
        fc.asyncProperty(testCase, async ({ docs, params }) => {
          await raw.deleteMany({});
          // Copies: the driver adds nothing to documents that have an _id, but stay safe.
          await raw.insertMany(docs.map((d) => structuredClone(d)));
          const q = parseListQuery(params);
          const expected = oracleFind(docs, q);
          const context = `params ${JSON.stringify(params)}\nfilter ${JSON.stringify(q.filter)}\nsort ${JSON.stringify(q.sort)}`;
          expect(await store.documents.count(scope, COLLECTION, q.filter), `count\n${context}`).to.equal(
            expected.count,
          );
          const query = {
            filter: q.filter,
            sort: q.sort,
            skip: q.offset,
            limit: q.limit,
            projection: q.projection,
          };
          let got: JsonObject[];
          try {
            got = await store.documents.find(scope, COLLECTION, query);
          } catch (error) {
            if (!(error instanceof QueryRejectedError)) throw error;
            const matched = new Query(toMingoFilter(q.filter)).find(docs).all() as JsonObject[];
            expect(mayHaveParallelArrays(matched, q.sort), `rejected: ${error.message}\n${context}`).to.equal(
              true,
            );
            expect(error.param).to.equal('sort');
            rejected++;
            return;
          }
          expect(
            got.map((d) => d._id),
            `page\n${context}`,
          ).to.deep.equal(expected.ids);
          if (q.projection) {
            const spec = Object.fromEntries(q.projection.map((path) => [path, 1]));
            const byId = new Map(docs.map((d) => [d._id, d]));
            for (const doc of got) {
              const [reference] = new Query({}).find([byId.get(doc._id)!], spec).all() as JsonObject[];
              expect(doc, `select\n${context}`).to.deep.equal(fromStored(reference!));
            }
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
      // Refusals are the exception: most cases must have been compared in full.
      expect(rejected).to.be.below(RUNS / 10);
    });
  });
}
