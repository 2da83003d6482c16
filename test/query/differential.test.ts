/**
 * Differential test of the query pipeline: generated documents and generated URL parameters go
 * through `parseListQuery`, then (a) the mingo oracle (see mingoOracle.ts) and (b) a real SQLite
 * database running `compileFilter`/`compileSort` with `registerQueryFunctions`, plus (c) the
 * in-memory `matchesFilter`. Matches, order, page and count must agree. The seed is fixed so a
 * failure replays; fast-check prints it with the shrunk counterexample. The same cases run
 * against a live MongoDB in differential.mongodb.test.ts.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import fc from 'fast-check';
import { Query } from 'mingo';
import { matchesFilter } from '../../src/query/documentMatcher.js';
import { parseListQuery } from '../../src/query/listQuery.js';
import { cursorAfter, keysetPosition } from '../../src/store/documentQuery/cursor.js';
import { projectStored } from '../../src/store/documentQuery/projection.js';
import { EmbeddedIndexes, sqlIndexNames } from '../../src/store/embedded/indexes/declaredIndexes.js';
import { indexKeySql, sortKeySql } from '../../src/store/embedded/indexes/indexKeys.js';
import { applySchema } from '../../src/store/embedded/layout/schema.js';
import { compileFilter } from '../../src/store/embedded/query/compileFilter.js';
import { compileKeyset, compileSort } from '../../src/store/embedded/query/compileSort.js';
import { indexedPathsOf } from '../../src/store/embedded/query/indexedPaths.js';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import type { SqlParam } from '../../src/store/embedded/query/sqlFragments.js';
import type { JsonObject } from '../../src/store/port.js';
import { RUNS, SEED, testCase } from './differentialCases.js';
import { oracleFind } from './mingoOracle.js';

// ---------------------------------------------------------------------------------------------
// The store side

function openDatabase(): Database.Database {
  const db = new Database(':memory:');
  registerQueryFunctions(db);
  // The embedded store's own schema, so the SQL runs over JSONB bodies as in production.
  applySchema(db);
  return db;
}

/** Top-level user fields of the generated documents: each gets a declared index in the indexed run. */
const INDEXED_FIELDS = ['n', 's', 'm', 'tags', 'o', 'items', 'stats', 'd', 'zzz'];

for (const indexed of [false, true]) {
  describe(`list queries agree with MongoDB semantics (mingo oracle vs SQLite${indexed ? ', every top-level field indexed @slow' : ''})`, function () {
    this.timeout(120_000);
    let db: Database.Database;
    let indexes: EmbeddedIndexes;
    let run = 0;
    const usable: ReadonlySet<string> = new Set(indexed ? INDEXED_FIELDS : []);

    before(() => {
      db = openDatabase();
      // Before the indexes below: with no declarations it would drop them as stale.
      indexes = new EmbeddedIndexes(db);
      // The declared indexes' own key expressions, so the planner answers from them. Not limited
      // to one collection as the store's are (each case has a collection of its own); the
      // queries here name the collection by parameter, which lets the planner use them.
      for (const path of usable) {
        for (const side of ['high', 'low'] as const) {
          db.exec(
            `CREATE INDEX ${sqlIndexNames[side]('any', 'any', path)} ON documents (scope, collection, ${indexKeySql(path, side, 'body')})`,
          );
        }
        db.exec(
          `CREATE INDEX ${sqlIndexNames.sort('any', 'any', path)} ON documents (scope, collection, ${sortKeySql(path, 'body')}, id)`,
        );
      }
    });
    after(() => db.close());

    it(`${RUNS} generated collections and queries give the same documents, order and count (seed ${SEED})`, () => {
      const insert = db.prepare(
        'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, jsonb(?))',
      );
      fc.assert(
        fc.property(testCase, ({ docs, params }) => {
          // A fresh collection per case; another scope holds a decoy copy that must never leak in.
          const name = `c${++run}`;
          db.transaction(() => {
            for (const doc of docs) {
              const folio = doc._folio as JsonObject;
              const row = [
                doc._id,
                folio.version,
                folio.createdAt,
                folio.updatedAt,
                JSON.stringify(doc),
              ] as const;
              insert.run('scope', name, ...row);
              insert.run('decoy', name, ...row);
            }
          })();

          const q = parseListQuery(params);
          // Paths without arrays in this collection also get the exact sort-key forms.
          const arrayFree = indexes.arrayFree('scope', name, indexedPathsOf(q.filter, q.sort, usable));
          const where = compileFilter(q.filter, usable, arrayFree);
          const order = compileSort(q.sort, usable, arrayFree);
          const base = `FROM documents d WHERE d.scope = ? AND d.collection = ? AND (${where.sql})`;
          const rows = db
            .prepare<SqlParam[], { body: string }>(
              `SELECT json(d.body) AS body ${base} ORDER BY ${order.sql} LIMIT ? OFFSET ?`,
            )
            .all('scope', name, ...where.params, ...order.params, q.limit, q.offset);
          const { n } = db
            .prepare<SqlParam[], { n: number }>(`SELECT count(*) AS n ${base}`)
            .get('scope', name, ...where.params)!;

          const expected = oracleFind(docs, q);
          const got = rows.map((r) => JSON.parse(r.body) as JsonObject);
          const context = `params ${JSON.stringify(params)}\nfilter ${JSON.stringify(q.filter)}\nsort ${JSON.stringify(q.sort)}`;
          expect(n, `count\n${context}`).to.equal(expected.count);
          expect(
            got.map((d) => d._id),
            `page\n${context}`,
          ).to.deep.equal(expected.ids);
          // The next page through a cursor (the exact keyset over the sort expressions): the
          // oracle's page at the next offset, when the last row's keys are ones a cursor carries.
          const last = got.at(-1);
          const cursor = q.limit > 0 && last ? cursorAfter(last, q.sort) : null;
          if (cursor !== null && expected.ids.length === q.limit) {
            const position = keysetPosition(cursor, q.sort);
            const keyset = compileKeyset(q.sort, position, usable, arrayFree);
            const next = where;
            const nextRows = db
              .prepare<SqlParam[], { id: string }>(
                `SELECT d.id FROM documents d WHERE d.scope = ? AND d.collection = ? AND ${keyset.sql} AND (${next.sql}) ORDER BY ${order.sql} LIMIT ?`,
              )
              .all('scope', name, ...keyset.params, ...next.params, ...order.params, q.limit)
              .map((r) => r.id);
            const following = oracleFind(docs, { ...q, offset: q.offset + q.limit });
            expect(nextRows, `cursor page\n${context}`).to.deep.equal(following.ids);
          }
          const inMemory = docs.filter((d) => matchesFilter(d, q.filter)).length;
          expect(inMemory, `matchesFilter\n${context}`).to.equal(expected.count);
          if (q.projection) {
            const spec = Object.fromEntries(q.projection.map((path) => [path, 1]));
            for (const doc of got) {
              const [reference] = new Query({}).find([doc], spec).all();
              expect(projectStored(doc, q.projection), `select\n${context}`).to.deep.equal(reference);
            }
          }
        }),
        { seed: SEED, numRuns: RUNS },
      );
    });
  });
}
