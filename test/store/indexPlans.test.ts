/**
 * SQLite's plan (EXPLAIN QUERY PLAN) for each filter shape on a declared index: the compiled SQL
 * must let the planner search the expression indexes instead of scanning the collection.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { type ListQuery, parseListQuery, type RawQuery } from '../../src/query/listQuery.js';
import { compileKeyAccess, withinView } from '../../src/services/keyAccess.js';
import {
  collectionMatch,
  EmbeddedIndexes,
  sqlIndexNames,
} from '../../src/store/embedded/indexes/declaredIndexes.js';
import { applySchema } from '../../src/store/embedded/layout/schema.js';
import { scopeKeyOf } from '../../src/store/embedded/layout/scopeKey.js';
import { compileFilter } from '../../src/store/embedded/query/compileFilter.js';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import { selectSql } from '../../src/store/embedded/query/selectSql.js';
import type { SqlParam } from '../../src/store/embedded/query/sqlFragments.js';
import type { DataScope, StoredFilter } from '../../src/store/port.js';

const scope: DataScope = { projectId: 'prj_1', env: 'test' };

describe('embedded store: filters on declared indexes use them (EXPLAIN QUERY PLAN)', () => {
  let db: Database.Database;
  let indexes: EmbeddedIndexes;

  before(async () => {
    db = new Database(':memory:');
    registerQueryFunctions(db);
    applySchema(db);
    const insert = db.prepare(
      'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) ' +
        "VALUES (?, ?, ?, 1, '', '', jsonb(?))",
    );
    indexes = new EmbeddedIndexes(db);
    // `c` for the plans; `dropped` the same, for the case that drops its index.
    for (const collection of ['c', 'dropped']) {
      for (let i = 0; i < 2000; i++) {
        insert.run(
          scopeKeyOf(scope),
          collection,
          `doc_${String(i).padStart(5, '0')}`,
          JSON.stringify({ age: i % 90, name: `n${i}` }),
        );
      }
      await indexes.create(
        scope,
        collection,
        { name: 'age_1', fields: [{ path: 'age', order: 1 }], unique: false },
        100,
      );
    }
  });
  after(() => db.close());

  const planOf = (query: RawQuery, kind: 'find' | 'count', collection = 'c'): string => {
    const q = parseListQuery(query);
    return planOfFilter(q.filter, q.sort, kind, collection);
  };
  const planOfFilter = (
    filter: StoredFilter,
    sort: ListQuery['sort'],
    kind: 'find' | 'count',
    collection = 'c',
  ): string => {
    const q = { filter, sort };
    const usable = indexes.usablePaths(scopeKeyOf(scope), collection);
    let sql: string;
    let params: SqlParam[];
    if (kind === 'find') {
      ({ sql, params } = selectSql(
        scope,
        collection,
        { filter: q.filter, sort: q.sort, skip: 0, limit: 21 },
        usable,
      ));
    } else {
      // As the store's count names the collection (literals: the indexes are partial).
      const target = collectionMatch(scopeKeyOf(scope), collection, usable);
      const where = compileFilter(q.filter, usable, undefined, target.literal);
      sql = `SELECT count(*) FROM documents d WHERE ${target.sql} AND (${where.sql})`;
      params = [...target.params, ...where.params];
    }
    return db
      .prepare<SqlParam[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((r) => r.detail)
      .join('\n');
  };

  const high = sqlIndexNames.high(scopeKeyOf(scope), 'c', 'age');
  const low = sqlIndexNames.low(scopeKeyOf(scope), 'c', 'age');
  const shapes: Array<[string, RawQuery, string[]]> = [
    ['equality', { 'filter[age]': '42' }, [high]],
    ['in', { 'filter[age][in]': '1,2,3' }, [high]],
    ['gt', { 'filter[age][gt]': '88' }, [high]],
    ['gte', { 'filter[age][gte]': '89' }, [high]],
    ['lt', { 'filter[age][lt]': '1' }, [low]],
    ['lte', { 'filter[age][lte]': '0' }, [low]],
    ['gte + lt (a range)', { 'filter[age][gte]': '10', 'filter[age][lt]': '11' }, [high, low]],
    ['exists=false', { 'filter[age][exists]': 'false' }, [high]],
    ['equality with another filter', { 'filter[age]': '42', 'filter[name][contains]': '4' }, [high]],
  ];

  for (const [name, query, usable] of shapes) {
    for (const kind of ['find', 'count'] as const) {
      it(`${name} (${kind}): searches a key index, never scans the collection`, () => {
        const plan = planOf(query, kind);
        const used = new RegExp(
          `SEARCH d USING (COVERING )?INDEX (${usable.join('|')}) \\(scope=\\? AND collection=\\? AND <expr>`,
        );
        expect(plan).to.match(used);
      });
    }
  }

  it('a key rule joined to the request (withinView: $and of the two) searches the index on the rule’s field', () => {
    const rule = { collections: ['c'], access: 'read' as const, filter: { age: 42 } };
    const view = compileKeyAccess([rule], 'read-only').collection('c');
    const request = parseListQuery({ 'filter[name][contains]': '4' });
    const used = new RegExp(
      `SEARCH d USING (COVERING )?INDEX ${high} \\(scope=\\? AND collection=\\? AND <expr>`,
    );
    for (const kind of ['find', 'count'] as const) {
      expect(planOfFilter(withinView(view, request.filter), request.sort, kind), kind).to.match(used);
    }
  });

  it('a filter on an unindexed field, and equality with null, still scan the collection', () => {
    // No key search on the filtered value: at most an index that narrows to the collection
    // (with two collections in the scope, SQLite may walk one of `c`'s instead of the table).
    const keySearch = /SEARCH d USING (COVERING )?INDEX \S+ \(scope=\? AND collection=\? AND <expr>/;
    for (const query of [{ 'filter[name]': 'n5' }, { 'filter[age]': 'null' }]) {
      const plan = planOf(query, 'count');
      expect(plan).to.not.match(keySearch);
      expect(plan).to.not.match(/fx_(high|low)_/);
    }
  });

  it('after the index is dropped, the same filter no longer names it', async () => {
    const names = [sqlIndexNames.high, sqlIndexNames.low].map((name) =>
      name(scopeKeyOf(scope), 'dropped', 'age'),
    );
    const present = () =>
      db
        .prepare<string[], { name: string }>('SELECT name FROM sqlite_master WHERE name IN (?, ?)')
        .all(...names)
        .map((r) => r.name);
    expect(planOf({ 'filter[age]': '42' }, 'count', 'dropped')).to.include(names[0]);
    await indexes.drop(scope, 'dropped', 'age_1');
    expect(planOf({ 'filter[age]': '42' }, 'count', 'dropped')).to.not.include('fx_');
    expect(present()).to.deep.equal([]);
    // The other collection's index is its own.
    expect(planOf({ 'filter[age]': '42' }, 'count')).to.include(high);
  });
});
