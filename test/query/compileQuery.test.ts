import Database from 'better-sqlite3';
import { expect } from 'chai';
import { matchesFilter } from '../../src/query/documentMatcher.js';
import { parseListQuery } from '../../src/query/listQuery.js';
import { applySchema } from '../../src/store/embedded/layout/schema.js';
import { compileFilter } from '../../src/store/embedded/query/compileFilter.js';
import { compileSort } from '../../src/store/embedded/query/compileSort.js';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import type { SqlParam } from '../../src/store/embedded/query/sqlFragments.js';
import type { FindQuery, JsonObject, StoredFilter } from '../../src/store/port.js';
import { planAndRows } from '../support/queryPlan.js';

/** Rows go in exactly as the embedded store writes them: its own schema, bodies as JSONB. */
const INSERT =
  'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?, ?, jsonb(?))';

/** A database holding `docs` (user fields; metadata filled in) in one collection. */
function databaseWith(docs: JsonObject[]): Database.Database {
  const db = new Database(':memory:');
  registerQueryFunctions(db);
  applySchema(db);
  const insert = db.prepare(INSERT);
  for (const doc of docs) {
    const folio = (doc._folio as JsonObject | undefined) ?? {
      version: 1,
      createdAt: '2024-01-01T00:00:00.000Z',
      updatedAt: '2024-01-01T00:00:00.000Z',
    };
    const stored = { ...doc, _folio: folio };
    insert.run('s', 'c', doc._id, folio.version, folio.createdAt, folio.updatedAt, JSON.stringify(stored));
  }
  return db;
}

function storedDocs(db: Database.Database): JsonObject[] {
  return db
    .prepare<[], { body: string }>("SELECT json(body) AS body FROM documents WHERE scope = 's' ORDER BY id")
    .all()
    .map((r) => JSON.parse(r.body) as JsonObject);
}

/** Ids matching `filter` in SQL, checked against the in-memory matcher, sorted. */
function idsMatching(db: Database.Database, filter: StoredFilter): string[] {
  const where = compileFilter(filter);
  const ids = db
    .prepare<SqlParam[], { id: string }>(
      `SELECT d.id FROM documents d WHERE d.scope = 's' AND d.collection = 'c' AND (${where.sql}) ORDER BY d.id`,
    )
    .all(...where.params)
    .map((r) => r.id);
  const inMemory = storedDocs(db)
    .filter((d) => matchesFilter(d, filter))
    .map((d) => d._id as string);
  expect(inMemory, `matchesFilter ${JSON.stringify(filter)}`).to.deep.equal(ids);
  return ids;
}

function idsSorted(db: Database.Database, sort: FindQuery['sort']): string[] {
  const order = compileSort(sort);
  return db
    .prepare<SqlParam[], { id: string }>(
      `SELECT d.id FROM documents d WHERE d.scope = 's' ORDER BY ${order.sql}`,
    )
    .all(...order.params)
    .map((r) => r.id);
}

const sorted = (ids: string[]) => [...ids].sort();

describe('embedded store: filters compile to SQL with MongoDB semantics', () => {
  describe('null and missing fields (cases from MongoDB jstests/core/query/null_query_semantics.js)', () => {
    const db = databaseWith([
      { _id: 'a_empty_subobject', a: {} },
      { _id: 'a_null', a: null },
      { _id: 'a_number', a: 4 },
      { _id: 'a_subobject_b_not_null', a: { b: 'hi' } },
      { _id: 'a_subobject_b_null', a: { b: null } },
      { _id: 'no_a' },
      { _id: 'a_double_array', a: [[]] },
      { _id: 'a_empty_array', a: [] },
      { _id: 'a_object_array_b_mix_null_missing', a: [{ b: null }, { b: null }, {}] },
      { _id: 'a_object_array_no_b_nulls', a: [{ b: 1 }, { b: 3 }, { b: 'string' }] },
      { _id: 'a_object_array_some_b_nulls', a: [{ b: null }, { b: 3 }, { b: null }] },
      { _id: 'a_object_array_some_b_missing', a: [{ b: 3 }, {}] },
      { _id: 'a_value_array_all_nulls', a: [null, null] },
      { _id: 'a_value_array_no_nulls', a: [1, 'string', 4] },
      { _id: 'a_value_array_with_null', a: [1, 'string', null, 4] },
    ]);

    it('{a: null} matches null, missing, and arrays holding null', () => {
      expect(idsMatching(db, { a: { $in: [null] } })).to.deep.equal(
        sorted(['a_null', 'a_value_array_all_nulls', 'a_value_array_with_null', 'no_a']),
      );
    });

    it("{'a.b': null} matches a scalar or missing a, a missing/null b, and arrays with an object lacking b", () => {
      expect(idsMatching(db, { 'a.b': { $in: [null, 75] } })).to.deep.equal(
        sorted([
          'a_empty_subobject',
          'a_null',
          'a_number',
          'a_subobject_b_null',
          'no_a',
          'a_object_array_b_mix_null_missing',
          'a_object_array_some_b_nulls',
          'a_object_array_some_b_missing',
        ]),
      );
    });

    it("{'a.b': {$nin: [null, 75]}} is exactly the complement", () => {
      expect(idsMatching(db, { 'a.b': { $nin: [null, 75] } })).to.deep.equal(
        sorted([
          'a_subobject_b_not_null',
          'a_double_array',
          'a_empty_array',
          'a_object_array_no_b_nulls',
          'a_value_array_all_nulls',
          'a_value_array_no_nulls',
          'a_value_array_with_null',
        ]),
      );
    });

    it('$exists false matches only where no value is present at the path', () => {
      expect(idsMatching(db, { a: { $exists: false } })).to.deep.equal(['no_a']);
      expect(idsMatching(db, { 'a.b': { $exists: false } })).to.deep.equal(
        sorted([
          'no_a',
          'a_empty_subobject',
          'a_null',
          'a_number',
          'a_double_array',
          'a_empty_array',
          'a_value_array_all_nulls',
          'a_value_array_no_nulls',
          'a_value_array_with_null',
        ]),
      );
    });
  });

  describe('arrays', () => {
    it('an array matches when any element matches; a path through an array of subdocuments reaches each one', () => {
      const db = databaseWith([
        { _id: 'd1', tags: ['red', 'blue'] },
        { _id: 'd2', items: [{ k: [1, 5] }, { k: 3 }] },
        { _id: 'd3', items: [{ k: 2 }, 7, { other: 1 }] },
        { _id: 'd4', deep: [{ x: [{ y: 'z' }] }] },
      ]);
      expect(idsMatching(db, { tags: { $in: ['blue'] } })).to.deep.equal(['d1']);
      expect(idsMatching(db, { 'items.k': { $in: [5] } })).to.deep.equal(['d2']);
      expect(idsMatching(db, { 'items.k': { $gt: 4 } })).to.deep.equal(['d2']);
      expect(idsMatching(db, { 'items.k': { $lte: 2 } })).to.deep.equal(['d2', 'd3']);
      expect(idsMatching(db, { 'deep.x.y': { $in: ['z'] } })).to.deep.equal(['d4']);
      expect(idsMatching(db, { 'items.k': { $exists: true } })).to.deep.equal(['d2', 'd3']);
    });

    it('numeric segments pick array positions and object fields alike (MongoDB jstests array_match2, find6)', () => {
      const db = databaseWith([
        { _id: 'e1', a: [{ '0': 1 }] },
        { _id: 'e2', a: [{ '0': 2 }] },
        { _id: 'e3', a: [1] },
        { _id: 'e4', a: [9, 1] },
        { _id: 'e5', b: [{ '1': 4 }, 5] },
        { _id: 'e6', c: [{ '1': { foo: 4 } }, { foo: 5 }] },
        { _id: 'e7', s: { '2024': 'yes' } },
      ]);
      expect(idsMatching(db, { 'a.0': { $in: [1] } })).to.deep.equal(['e1', 'e3']);
      expect(idsMatching(db, { 'a.0': { $gt: 8 } })).to.deep.equal(['e4']);
      expect(idsMatching(db, { 'b.1': { $in: [4] } })).to.deep.equal(['e5']);
      expect(idsMatching(db, { 'b.1': { $in: [5] } })).to.deep.equal(['e5']);
      expect(idsMatching(db, { 'c.1.foo': { $in: [4] } })).to.deep.equal(['e6']);
      expect(idsMatching(db, { 'c.1.foo': { $in: [5] } })).to.deep.equal(['e6']);
      expect(idsMatching(db, { 's.2024': { $in: ['yes'] } })).to.deep.equal(['e7']);
    });

    it('a position picks the element itself: a nested array there is one value, not its elements (path.cpp)', () => {
      const db = databaseWith([
        { _id: 'n1', n: [[1, 2], 3] },
        { _id: 'n2', n: [1] },
      ]);
      expect(idsMatching(db, { 'n.0': { $in: [1] } })).to.deep.equal(['n2']);
      expect(idsMatching(db, { 'n.0.1': { $in: [2] } })).to.deep.equal(['n1']);
      expect(idsMatching(db, { 'n.0': { $exists: true } })).to.deep.equal(['n1', 'n2']);
      expect(idsMatching(db, { 'n.1': { $exists: true } })).to.deep.equal(['n1']);
    });
  });

  describe('types', () => {
    const db = databaseWith([
      { _id: 'n10', v: 10 },
      { _id: 'n2', v: 2.5 },
      { _id: 's10', v: '10' },
      { _id: 'sabc', v: 'abc' },
      { _id: 'btrue', v: true },
      { _id: 'bfalse', v: false },
      { _id: 'nul', v: null },
      { _id: 'obj', v: { x: 1 } },
    ]);

    it('equality keeps types apart: 10 is not "10", true is not 1', () => {
      expect(idsMatching(db, { v: { $in: [10] } })).to.deep.equal(['n10']);
      expect(idsMatching(db, { v: { $in: ['10'] } })).to.deep.equal(['s10']);
      expect(idsMatching(db, { v: { $in: [true] } })).to.deep.equal(['btrue']);
      expect(idsMatching(db, { v: { $in: [1, 0] } })).to.deep.equal([]);
      expect(idsMatching(db, { v: { $in: ['{"x":1}'] } })).to.deep.equal([]);
    });

    it('range comparisons stay within a type bracket (numbers with numbers, strings with strings)', () => {
      expect(idsMatching(db, { v: { $gt: 2 } })).to.deep.equal(['n10', 'n2']);
      expect(idsMatching(db, { v: { $gte: '10' } })).to.deep.equal(['s10', 'sabc']);
      expect(idsMatching(db, { v: { $lt: 'a' } })).to.deep.equal(['s10']);
    });

    it('string comparison is binary (UTF-8 byte order), not collated', () => {
      const strings = databaseWith([
        { _id: 'upper', s: 'B' },
        { _id: 'lower', s: 'a' },
        { _id: 'accent', s: 'é' },
        { _id: 'emoji', s: '😀' },
      ]);
      expect(idsMatching(strings, { s: { $gt: 'Z' } })).to.deep.equal(['accent', 'emoji', 'lower']);
      expect(idsMatching(strings, { s: { $gt: 'é' } })).to.deep.equal(['emoji']);
    });
  });

  describe('contains ($regex with i)', () => {
    const db = databaseWith([
      { _id: 'long-s', w: 'ſ' },
      { _id: 'kelvin', w: 'K' },
      { _id: 'final-sigma', w: 'ς' },
      { _id: 'capital-sharp-s', w: 'ẞ' },
      { _id: 'e-acute-upper', w: 'ÉCLAIR' },
      { _id: 'plain', w: 'a.b*c' },
      { _id: 'array', w: ['x', 'Needle'] },
      { _id: 'number', w: 12345 },
    ]);
    const contains = (text: string) => ({ w: { $regex: parseRegex(text), $options: 'i' } });
    const parseRegex = (text: string) =>
      (parseListQuery({ 'filter[w][contains]': text }).filter as { w: { $regex: string } }).w.$regex;

    it('folds case the Unicode way, as MongoDB (PCRE in UTF mode) does', () => {
      expect(idsMatching(db, contains('s'))).to.deep.equal(['long-s']);
      expect(idsMatching(db, contains('k'))).to.deep.equal(['kelvin']);
      expect(idsMatching(db, contains('Σ'))).to.deep.equal(['final-sigma']);
      expect(idsMatching(db, contains('ß'))).to.deep.equal(['capital-sharp-s']);
      expect(idsMatching(db, contains('éclair'))).to.deep.equal(['e-acute-upper']);
    });

    it('treats the text literally, looks into arrays, and ignores non-strings', () => {
      expect(idsMatching(db, contains('.B*'))).to.deep.equal(['plain']);
      expect(idsMatching(db, contains('a.c'))).to.deep.equal([]);
      expect(idsMatching(db, contains('needle'))).to.deep.equal(['array']);
      expect(idsMatching(db, contains('234'))).to.deep.equal([]);
    });
  });

  describe('metadata columns', () => {
    const db = databaseWith([
      {
        _id: 'doc_a',
        _folio: { version: 5, createdAt: '2024-01-01T00:00:00.000Z', updatedAt: '2024-03-01T00:00:00.000Z' },
      },
      {
        _id: 'doc_b',
        _folio: { version: 12, createdAt: '2024-02-01T00:00:00.000Z', updatedAt: '2024-02-01T00:00:00.000Z' },
      },
    ]);

    it('$version equality matches the number, never a string', () => {
      expect(idsMatching(db, { '_folio.version': { $in: ['5', 5] } })).to.deep.equal(['doc_a']);
      expect(idsMatching(db, { '_folio.version': { $in: ['5'] } })).to.deep.equal([]);
      expect(idsMatching(db, { '_folio.version': { $nin: ['5', 5] } })).to.deep.equal(['doc_b']);
    });

    it('$version compares only with numbers ("abc" matches nothing)', () => {
      expect(idsMatching(db, { '_folio.version': { $gt: 'abc' } })).to.deep.equal([]);
      expect(idsMatching(db, { '_folio.version': { $gt: 6 } })).to.deep.equal(['doc_b']);
    });

    it('_id and timestamps are strings: numbers never match them, ISO text orders them', () => {
      expect(idsMatching(db, { _id: { $gt: 5 } })).to.deep.equal([]);
      expect(idsMatching(db, { _id: { $gt: 'doc_a' } })).to.deep.equal(['doc_b']);
      expect(idsMatching(db, { '_folio.createdAt': { $gte: '2024-02' } })).to.deep.equal(['doc_b']);
      expect(idsMatching(db, { '_folio.updatedAt': { $lt: '2024-02-15' } })).to.deep.equal(['doc_b']);
      expect(idsMatching(db, { _id: { $regex: 'B$', $options: 'i' } })).to.deep.equal(['doc_b']);
    });

    it('metadata always exists', () => {
      expect(idsMatching(db, { _id: { $exists: true } })).to.deep.equal(['doc_a', 'doc_b']);
      expect(idsMatching(db, { '_folio.version': { $exists: false } })).to.deep.equal([]);
      expect(idsMatching(db, { '_folio.version': { $in: [null] } })).to.deep.equal([]);
    });
  });

  describe('safety', () => {
    const weird = [
      "x'); DROP TABLE documents; --",
      'quote"d',
      'back\\slash',
      'br[0]acket',
      'star*',
      'new\nline',
      'nul\u0000byte',
      'é😀',
      'a$',
      ' ',
    ];

    it('field names with quotes, backslashes, brackets and control characters address exactly that field', () => {
      const db = databaseWith(
        weird.map((name, i) => ({ _id: `w${i}`, [name]: 'hit', nested: { [name]: i } })),
      );
      weird.forEach((name, i) => {
        expect(idsMatching(db, { [name]: { $in: ['hit'] } }), name).to.deep.equal([`w${i}`]);
        expect(idsMatching(db, { [`nested.${name}`]: { $in: [i] } }), name).to.deep.equal([`w${i}`]);
      });
      expect(idsMatching(db, { _id: { $exists: true } })).to.have.length(weird.length);
    });

    it('no field name or value appears in the SQL text; the text depends only on the query shape', () => {
      const a = compileFilter({ [weird[0]!]: { $in: ["'; DROP TABLE x; --"] }, 'n.m': { $gt: 1 } });
      const b = compileFilter({ other: { $in: ['plain'] }, 'p.q': { $gt: 99 } });
      expect(a.sql).to.equal(b.sql);
      expect(a.sql).not.to.contain('DROP');
      expect(a.params).to.include("'; DROP TABLE x; --");
      const s1 = compileSort([
        [weird[0]!, 1],
        ['_id', 1],
      ]);
      const s2 = compileSort([
        ['plain', 1],
        ['_id', 1],
      ]);
      expect(s1.sql).to.equal(s2.sql);
    });

    it('anything outside the generated subset is a programming error (plain Error), not a query', () => {
      const bad: StoredFilter[] = [
        { $or: [] },
        { $nor: {} },
        { $not: [{ a: { $in: [1] } }] },
        { a: 1 },
        { a: { $eq: 1 } },
        { a: { $ne: 1 } },
        { a: { $elemMatch: { b: 1 } } },
        { a: { $in: [{ b: 1 }] } },
        { a: { $in: 1 } },
        { a: { $gt: true } },
        { a: { $regex: 'x', $options: 'm' } },
        { a: { $options: 'i' } },
        { a: { $exists: 'yes' } },
        { $and: [] },
        { $where: 'true' },
      ];
      for (const filter of bad) {
        expect(() => compileFilter(filter), JSON.stringify(filter))
          .to.throw(Error)
          .that.has.property('name', 'Error');
      }
    });
  });
});

describe('embedded store: sorts follow MongoDB order', () => {
  const db = databaseWith([
    { _id: 'k01-missing' },
    { _id: 'k02-null', v: null },
    { _id: 'k03-empty-array', v: [] },
    { _id: 'k04-ten', v: 10 },
    { _id: 'k05-two', v: 2 },
    { _id: 'k06-string-10', v: '10' },
    { _id: 'k07-upper-b', v: 'B' },
    { _id: 'k08-lower-a', v: 'a' },
    { _id: 'k09-object', v: { x: 1 } },
    { _id: 'k10-object-smaller', v: { x: 0, y: 9 } },
    { _id: 'k11-true', v: true },
    { _id: 'k12-false', v: false },
    { _id: 'k13-array-1-50', v: [50, 1] },
    { _id: 'k14-array-str', v: ['zz', 3] },
    { _id: 'k15-float', v: 2.5 },
    { _id: 'k16-negative', v: -7 },
  ]);

  it('ascending: [] < null = missing (ties by _id) < numbers < strings (binary) < objects < booleans; arrays by their smallest element', () => {
    expect(
      idsSorted(db, [
        ['v', 1],
        ['_id', 1],
      ]),
    ).to.deep.equal([
      'k03-empty-array',
      'k01-missing',
      'k02-null',
      'k16-negative',
      'k13-array-1-50',
      'k05-two',
      'k15-float',
      'k14-array-str',
      'k04-ten',
      'k06-string-10',
      'k07-upper-b',
      'k08-lower-a',
      'k10-object-smaller',
      'k09-object',
      'k12-false',
      'k11-true',
    ]);
  });

  it("descending reverses the order, taking the largest element of an array ('zz' of ['zz', 3])", () => {
    expect(
      idsSorted(db, [
        ['v', -1],
        ['_id', -1],
      ]),
    ).to.deep.equal([
      'k11-true',
      'k12-false',
      'k09-object',
      'k10-object-smaller',
      'k14-array-str',
      'k08-lower-a',
      'k07-upper-b',
      'k06-string-10',
      'k13-array-1-50',
      'k04-ten',
      'k15-float',
      'k05-two',
      'k16-negative',
      'k02-null',
      'k01-missing',
      'k03-empty-array',
    ]);
  });

  it('dotted sorts reach into arrays of subdocuments; elements that are not subdocuments count as null', () => {
    const items = databaseWith([
      { _id: 'i1', items: [{ k: 5 }, { k: 1 }] },
      { _id: 'i2', items: [{ k: 3 }] },
      { _id: 'i3', items: [{ k: 4 }, 'scalar'] },
      { _id: 'i4', items: { k: 2 } },
    ]);
    expect(
      idsSorted(items, [
        ['items.k', 1],
        ['_id', 1],
      ]),
    ).to.deep.equal(['i3', 'i1', 'i4', 'i2']);
    expect(
      idsSorted(items, [
        ['items.k', -1],
        ['_id', -1],
      ]),
    ).to.deep.equal(['i1', 'i3', 'i2', 'i4']);
  });

  it('metadata sorts use the columns', () => {
    expect(
      compileSort([
        ['_folio.createdAt', -1],
        ['_id', -1],
      ]).sql,
    ).to.equal('d.created_at DESC, d.id DESC');
    expect(
      compileSort([
        ['_folio.updatedAt', 1],
        ['_id', 1],
      ]).sql,
    ).to.equal('d.updated_at ASC, d.id ASC');
    expect(
      compileSort([
        ['_folio.version', 1],
        ['_id', 1],
      ]).sql,
    ).to.equal('d.version ASC, d.id ASC');
  });
});

describe('embedded store: indexed list queries on 100,000 documents', function () {
  this.timeout(60_000);
  const N = 100_000;
  let db: Database.Database;

  before(() => {
    db = new Database(':memory:');
    registerQueryFunctions(db);
    applySchema(db);
    const insert = db.prepare(INSERT);
    db.transaction(() => {
      for (let i = 0; i < N; i++) {
        const id = `doc_${String(i).padStart(6, '0')}`;
        // Timestamps run against id order, so a wrong index would give a visibly wrong page.
        const created = new Date(Date.UTC(2024, 0, 1) + (N - i) * 1000).toISOString();
        const updated = new Date(Date.UTC(2024, 0, 1) + ((i * 7919) % N) * 1000).toISOString();
        const version = 1 + (i % 4);
        const body = {
          _id: id,
          n: i % 100,
          city: i % 3 === 0 ? 'Paris' : 'Oslo',
          _folio: { version, createdAt: created, updatedAt: updated },
        };
        insert.run('s', 'c', id, version, created, updated, JSON.stringify(body));
        insert.run('other', 'c', id, version, created, updated, JSON.stringify(body));
      }
    })();
  });
  after(() => db.close());

  function plan(params: Record<string, string>): { detail: string; ids: string[] } {
    const q = parseListQuery(params);
    const where = compileFilter(q.filter);
    const order = compileSort(q.sort);
    const sql = `SELECT d.id, json(d.body) AS body FROM documents d WHERE d.scope = ? AND d.collection = ? AND (${where.sql}) ORDER BY ${order.sql} LIMIT ? OFFSET ?`;
    const args: SqlParam[] = ['s', 'c', ...where.params, ...order.params, q.limit, q.offset];
    const { plan: detail, rows } = planAndRows<{ id: string }>(db, sql, args);
    return { detail, ids: rows.map((r) => r.id) };
  }

  const cases: Array<{ params: Record<string, string>; index: string }> = [
    { params: { 'filter[city]': 'Paris', sort: '-$createdAt' }, index: 'documents_created' },
    { params: { 'filter[n][gt]': '50', sort: '$createdAt' }, index: 'documents_created' },
    {
      params: { 'filter[$createdAt][gte]': '2024-01-01T12:00:00.000Z', sort: '-$createdAt' },
      index: 'documents_created',
    },
    { params: { 'filter[city]': 'Oslo', sort: '$updatedAt' }, index: 'documents_updated' },
    {
      params: { 'filter[$updatedAt][lt]': '2024-01-01T06:00:00.000Z', sort: '-$updatedAt' },
      index: 'documents_updated',
    },
    { params: { 'filter[n]': '7' }, index: 'sqlite_autoindex_documents_1' },
    { params: { 'filter[n][lt]': '10', sort: '-_id' }, index: 'sqlite_autoindex_documents_1' },
    { params: { 'filter[_id][gt]': 'doc_050000', sort: '_id' }, index: 'sqlite_autoindex_documents_1' },
    { params: { 'filter[city]': 'Paris', sort: '-$version' }, index: 'documents_version' },
  ];

  for (const { params, index } of cases) {
    it(`${new URLSearchParams(params).toString()} walks ${index} in order: no sort of the collection`, () => {
      const { detail } = plan(params);
      expect(detail).to.contain(`USING INDEX ${index}`);
      expect(detail).not.to.contain('TEMP B-TREE');
    });
  }

  it('the indexed pages are the right documents in the right order', () => {
    // Created time runs against id order: newest first is lowest id first.
    expect(plan({ 'filter[city]': 'Paris', sort: '-$createdAt', limit: '3' }).ids).to.deep.equal([
      'doc_000000',
      'doc_000003',
      'doc_000006',
    ]);
    expect(plan({ 'filter[n][gt]': '98', sort: '$createdAt', limit: '2' }).ids).to.deep.equal([
      'doc_099999',
      'doc_099899',
    ]);
    expect(plan({ 'filter[n]': '7', sort: '-_id', limit: '2', offset: '1' }).ids).to.deep.equal([
      'doc_099807',
      'doc_099707',
    ]);
  });
});

describe('embedded store: conditions the sort key states exactly', () => {
  const indexed = new Set(['n', 's']);
  const arrayFree = new Set(['n', 's']);
  const jsonTests = (filter: StoredFilter, free: ReadonlySet<string> = arrayFree) =>
    (compileFilter(filter, indexed, free).sql.match(/json_type/g) ?? []).length;

  it('leave out the JSON condition of an array-free indexed path constrained by `in` over scalars or bounds', () => {
    expect(jsonTests({ n: { $in: [1, 2] } })).to.equal(0);
    expect(jsonTests({ n: { $gte: 1, $lt: 5 }, s: { $in: ['a', null, true] } })).to.equal(0);
  });

  it('keep it for any other operator, an object operand, a path that may hold an array, or inside $and', () => {
    expect(jsonTests({ s: { $regex: 'a', $options: 'i' } })).to.be.above(0);
    expect(jsonTests({ n: { $nin: [1] } })).to.be.above(0);
    expect(jsonTests({ n: { $gte: 1, $exists: true } })).to.be.above(0);
    expect(jsonTests({ n: { $in: [1] } }, new Set())).to.be.above(0);
    expect(jsonTests({ $and: [{ n: { $in: [1] } }] })).to.be.above(0);
  });
});
