/**
 * Sorts and cursor pages on a declared index (embedded store): SQLite's plan (EXPLAIN QUERY
 * PLAN) must walk or seek the path's sort index — never "USE TEMP B-TREE FOR ORDER BY", never
 * a walk of the collection up to a deep cursor — and the rows must be MongoDB's order. Where
 * the index cannot give that order (a descending sort while some document holds an array), the
 * plan sorts and the answer stays right.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { parseListQuery, type RawQuery } from '../../src/query/listQuery.js';
import { cursorAfter } from '../../src/store/documentQuery/cursor.js';
import { EmbeddedIndexes, sqlIndexNames } from '../../src/store/embedded/indexes/declaredIndexes.js';
import { applySchema } from '../../src/store/embedded/layout/schema.js';
import { scopeKeyOf } from '../../src/store/embedded/layout/scopeKey.js';
import { indexedPathsOf } from '../../src/store/embedded/query/indexedPaths.js';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import { selectSql } from '../../src/store/embedded/query/selectSql.js';
import type { DataScope, JsonObject } from '../../src/store/port.js';
import { planAndRows } from '../support/queryPlan.js';

const scope: DataScope = { projectId: 'prj_1', env: 'test' };
const N = 5000;

describe('embedded store: sorts and cursor pages on a declared index walk it (EXPLAIN QUERY PLAN)', function () {
  this.timeout(60_000);
  let db: Database.Database;
  let indexes: EmbeddedIndexes;
  const docs: JsonObject[] = [];

  before(async () => {
    db = new Database(':memory:');
    registerQueryFunctions(db);
    applySchema(db);
    const insert = db.prepare(
      "INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) VALUES (?, ?, ?, 1, '', '', jsonb(?))",
    );
    db.transaction(() => {
      for (let i = 0; i < N; i++) {
        const id = `doc_${String(i).padStart(5, '0')}`;
        // Prices repeat (ties broken by _id), run against id order, and 1 in 50 is a string.
        const price = i % 50 === 7 ? `p${i % 13}` : (i * 7919) % 1000;
        const doc: JsonObject = { _id: id, price, city: i % 3 === 0 ? 'Paris' : 'Oslo', n: i % 90 };
        docs.push(doc);
        insert.run(scopeKeyOf(scope), 'c', id, JSON.stringify(doc));
        // The same collection name in another scope must never show up.
        insert.run('other', 'c', id, JSON.stringify({ ...doc, price: -1 }));
      }
    })();
    indexes = new EmbeddedIndexes(db);
    for (const path of ['price', 'n']) {
      await indexes.create(
        scope,
        'c',
        { name: `${path}_1`, fields: [{ path, order: 1 }], unique: false },
        100,
      );
    }
  });
  after(() => db.close());

  function run(query: RawQuery, after?: string): { plan: string; ids: string[] } {
    const q = parseListQuery(after === undefined ? query : { ...query, after });
    const usable = indexes.usablePaths(scopeKeyOf(scope), 'c');
    const arrayFree = indexes.arrayFree(scopeKeyOf(scope), 'c', indexedPathsOf(q.filter, q.sort, usable));
    const { sql, params } = selectSql(
      scope,
      'c',
      { filter: q.filter, sort: q.sort, skip: q.offset, limit: q.limit, after: q.position },
      usable,
      false,
      arrayFree,
    );
    const { plan, rows } = planAndRows<{ body: string }>(db, sql, params);
    return { plan, ids: rows.map((r) => (JSON.parse(r.body) as JsonObject)._id as string) };
  }

  /** The cursor of the row at `offset` in the query's order (as meta.next would give it). */
  function cursorAt(query: RawQuery, offset: number): string {
    const q = parseListQuery({ ...query, limit: '1', offset: String(offset) });
    const [id] = run({ ...query, limit: '1', offset: String(offset) }).ids;
    const last = docs.find((d) => d._id === id)!;
    return cursorAfter(last, q.sort)!;
  }

  /** MongoDB's order for these documents: numbers < strings, ties by _id. */
  function expected(filter: (d: JsonObject) => boolean, direction: 1 | -1): string[] {
    const key = (d: JsonObject) =>
      (typeof d.price === 'number' ? [0, d.price] : [1, d.price]) as [number, number | string];
    return docs
      .filter(filter)
      .sort((a, b) => {
        const [ra, va] = key(a);
        const [rb, vb] = key(b);
        const c =
          ra !== rb ? ra - rb : va < vb ? -1 : va > vb ? 1 : (a._id as string) < (b._id as string) ? -1 : 1;
        return c * direction;
      })
      .map((d) => d._id as string);
  }

  const sortIndex = sqlIndexNames.sort(scopeKeyOf(scope), 'c', 'price');
  const walksSortIndex = (plan: string) => {
    expect(plan).to.match(new RegExp(`(SEARCH|SCAN) d USING INDEX ${sortIndex}\\b`));
    expect(plan).not.to.include('TEMP B-TREE');
  };

  for (const direction of [1, -1] as const) {
    const sort = direction === 1 ? 'price' : '-price';
    describe(`sort=${sort}`, () => {
      const all: string[] = [];
      before(() => all.push(...expected(() => true, direction)));

      it('a page walks the sort index in order, nothing sorted', () => {
        const { plan, ids } = run({ sort, limit: '20' });
        walksSortIndex(plan);
        expect(ids).to.deep.equal(all.slice(0, 20));
      });

      it('a cursor page deep in the collection seeks into the index (a range on its key)', () => {
        const after = cursorAt({ sort }, 4000);
        const { plan, ids } = run({ sort, limit: '20' }, after);
        walksSortIndex(plan);
        expect(plan).to.match(
          new RegExp(
            `SEARCH d USING INDEX ${sortIndex} \\(scope=\\? AND collection=\\? AND <expr>[<>]\\?\\)`,
          ),
        );
        expect(ids).to.deep.equal(all.slice(4001, 4021));
      });

      it('a cursor inside a run of equal prices continues by _id (ties are not skipped or repeated)', () => {
        const first = run({ sort, limit: '3' }).ids;
        const after = cursorAt({ sort }, 1);
        expect(run({ sort, limit: '2' }, after).ids).to.deep.equal(all.slice(2, 4));
        expect(first).to.deep.equal(all.slice(0, 3));
      });

      it('equality on the sorted field seeks the keys and keeps their order', () => {
        const { plan, ids } = run({ 'filter[price][in]': '10,20,30', sort, limit: '50' });
        walksSortIndex(plan);
        expect(ids).to.deep.equal(
          expected((d) => d.price === 10 || d.price === 20 || d.price === 30, direction).slice(0, 50),
        );
      });

      it('a two-sided range on the sorted field is one index range, walked in order', () => {
        const { plan, ids } = run({
          'filter[price][gte]': '100',
          'filter[price][lt]': '200',
          sort,
          limit: '20',
        });
        walksSortIndex(plan);
        expect(plan).to.match(
          new RegExp(
            `SEARCH d USING INDEX ${sortIndex} \\(scope=\\? AND collection=\\? AND <expr>>\\? AND <expr><\\?\\)`,
          ),
        );
        const inRange = (d: JsonObject) => typeof d.price === 'number' && d.price >= 100 && d.price < 200;
        expect(ids).to.deep.equal(expected(inRange, direction).slice(0, 20));
      });

      it('a one-sided range stays inside its type bracket (strings are not numbers ≥ 990)', () => {
        const { plan, ids } = run({ 'filter[price][gte]': '990', sort, limit: '100' });
        walksSortIndex(plan);
        const high = (d: JsonObject) => typeof d.price === 'number' && d.price >= 990;
        expect(ids).to.deep.equal(expected(high, direction).slice(0, 100));
      });

      it('another filter with the sort still walks the sort index; a cursor page seeks it', () => {
        const query = { 'filter[city]': 'Paris', sort, limit: '20' };
        walksSortIndex(run(query).plan);
        const paris = expected((d) => d.city === 'Paris', direction);
        const after = cursorAt(query, 1000);
        const { plan, ids } = run(query, after);
        walksSortIndex(plan);
        expect(ids).to.deep.equal(paris.slice(1001, 1021));
      });
    });
  }

  it('a two-sided range without a sort is one index range with both bounds', () => {
    const { plan, ids } = run({ 'filter[n][gte]': '10', 'filter[n][lt]': '12', limit: '1000' });
    expect(plan).to.match(
      /SEARCH d USING INDEX fx_\w+ \(scope=\? AND collection=\? AND <expr>>\? AND <expr><\?\)/,
    );
    expect(ids).to.deep.equal(
      docs
        .filter((d) => (d.n as number) >= 10 && (d.n as number) < 12)
        .map((d) => d._id as string)
        .sort(),
    );
  });

  it('an unindexed sort, or the sort index of another scope, is not used', () => {
    expect(run({ sort: 'city', limit: '5' }).plan).to.include('TEMP B-TREE');
  });

  describe('once a document holds an array there', () => {
    before(() => {
      db.prepare(
        "INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) VALUES (?, 'c', 'arr', 1, '', '', jsonb(?))",
      ).run(scopeKeyOf(scope), JSON.stringify({ _id: 'arr', price: [5000, -5] }));
      // Written past the store here, so told as the store's own writes tell it.
      indexes.documentsWritten(scopeKeyOf(scope), 'c');
    });
    after(() => {
      db.prepare("DELETE FROM documents WHERE id = 'arr'").run();
      indexes.documentsWritten(scopeKeyOf(scope), 'c');
    });

    it('ascending still walks the index: an array sorts by its smallest element, the key the index holds', () => {
      const { plan, ids } = run({ sort: 'price', limit: '2' });
      walksSortIndex(plan);
      expect(ids[0]).to.equal('arr');
    });

    it('descending sorts by the largest element, which the index does not hold: the plan sorts', () => {
      const { plan, ids } = run({ sort: '-price', limit: '2' });
      expect(plan).to.include('USE TEMP B-TREE FOR ORDER BY');
      // Strings come after numbers; the largest number is the array's 5000, before every other number.
      const strings = docs.filter((d) => typeof d.price === 'string').length;
      expect(run({ sort: '-price', limit: String(strings + 1) }).ids.at(-1)).to.equal('arr');
      expect(ids).to.have.length(2);
    });

    it('a two-sided range is one range of the high index plus the array marker, and finds an array by an element', () => {
      const { plan, ids } = run({ 'filter[price][gte]': '100', 'filter[price][lt]': '110', limit: '1000' });
      const high = sqlIndexNames.high(scopeKeyOf(scope), 'c', 'price');
      expect(plan).to.include('MULTI-INDEX OR');
      expect(plan).to.include(
        `SEARCH d USING INDEX ${high} (scope=? AND collection=? AND <expr>>? AND <expr><?)`,
      );
      expect(plan).to.include(`SEARCH d USING INDEX ${high} (scope=? AND collection=? AND <expr>=?)`);
      const inRange = (d: JsonObject) => typeof d.price === 'number' && d.price >= 100 && d.price < 110;
      // Each bound may hold for another element (no $elemMatch): [5000, -5] is ≥ 100 and < 110.
      expect(ids).to.deep.equal(['arr', ...docs.filter(inRange).map((d) => d._id as string)]);
      expect(run({ 'filter[price][gte]': '4000', 'filter[price][lt]': '6000' }).ids).to.deep.equal(['arr']);
    });
  });
});
