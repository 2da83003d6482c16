/**
 * Declared indexes on MongoDB, without a server: the createIndex arguments, the listIndexes
 * reading, the duplicate-key classification and the duplicates pipeline (run by mingo).
 */
import { expect } from 'chai';
import { aggregate, find } from 'mingo';
import { MongoServerError } from 'mongodb';
import { guardId } from '../../src/store/mongodb/database/guards.js';
import {
  conflictingIndexName,
  countedIndexNames,
  duplicatesPipeline,
  fromMongoIndex,
  overIndexLimit,
  planOfExplain,
  reservationId,
  reservationRange,
  sameKeyFilter,
  toMongoIndex,
} from '../../src/store/mongodb/indexes/declaredIndexes.js';
import { DOCUMENT_INDEXES, indexServesSort } from '../../src/store/mongodb/layout/indexes.js';
import type { DataScope } from '../../src/store/port.js';

describe('MongoDB declared indexes (pure parts)', () => {
  it('creates an index with the declared name, paths and directions', () => {
    expect(
      toMongoIndex({
        name: 'city_age',
        fields: [
          { path: 'address.city', order: 1 },
          { path: 'age', order: -1 },
        ],
        unique: false,
      }),
    ).to.deep.equal({
      key: [
        ['address.city', 1],
        ['age', -1],
        ['_id', -1],
      ],
      options: { name: 'city_age' },
    });
  });

  it('a non-unique index ends with _id, so it serves the list sort (tie-break on _id) both ways', () => {
    const { key } = toMongoIndex({ name: 'price_1', fields: [{ path: 'price', order: 1 }], unique: false });
    const pattern = Object.fromEntries(key as Array<[string, 1 | -1]>);
    expect(
      indexServesSort(pattern, [
        ['price', 1],
        ['_id', 1],
      ]),
    ).to.equal(true);
    expect(
      indexServesSort(pattern, [
        ['price', -1],
        ['_id', -1],
      ]),
    ).to.equal(true);
    // Without the appended _id, the sort Folio sends would need a blocking sort stage.
    expect(
      indexServesSort({ price: 1 }, [
        ['price', 1],
        ['_id', 1],
      ]),
    ).to.equal(false);
    const unique = toMongoIndex({ name: 'email_1', fields: [{ path: 'email', order: 1 }], unique: true });
    expect(unique.key).to.deep.equal([['email', 1]]);
  });

  it('lists an index created with the appended _id as its declared fields', () => {
    expect(fromMongoIndex({ v: 2, key: { price: -1, _id: -1 }, name: 'price_-1' })?.fields).to.deep.equal([
      { path: 'price', order: -1 },
    ]);
  });

  it('a unique index skips documents without the field (partial on $exists), like the embedded store', () => {
    expect(
      toMongoIndex({ name: 'email_1', fields: [{ path: 'email', order: 1 }], unique: true }).options,
    ).to.deep.equal({
      name: 'email_1',
      unique: true,
      partialFilterExpression: { email: { $exists: true } },
    });
  });

  it('lists declared indexes, never MongoDB’s own _id index', () => {
    expect(fromMongoIndex({ v: 2, key: { _id: 1 }, name: '_id_' })).to.equal(null);
    for (const own of DOCUMENT_INDEXES) {
      expect(fromMongoIndex({ v: 2, key: own.key as Record<string, 1>, name: own.name ?? '' })).to.equal(
        null,
      );
    }
    expect(fromMongoIndex({ v: 2, key: { age: -1, 'a.b': 1 }, name: 'x', unique: true })).to.deep.equal({
      name: 'x',
      fields: [
        { path: 'age', order: -1 },
        { path: 'a.b', order: 1 },
      ],
      unique: true,
      state: 'ready',
      createdAt: '',
    });
  });

  it('names the declared index of a duplicate-key error; `_id` and other errors are not one', () => {
    const duplicate = (index: string) =>
      new MongoServerError({
        code: 11000,
        errmsg: `E11000 duplicate key error collection: folio_p.users index: ${index} dup key: { email: "a" }`,
      });
    expect(conflictingIndexName(duplicate('email_unique'))).to.equal('email_unique');
    expect(conflictingIndexName(duplicate('_id_'))).to.equal(null);
    expect(conflictingIndexName(new MongoServerError({ code: 112, errmsg: 'WriteConflict' }))).to.equal(null);
    expect(conflictingIndexName(new Error('index: x'))).to.equal(null);
  });

  it('finds the holder of a multikey unique value: any element, through arrays of objects', () => {
    const held = [
      { _id: 'h1', tags: ['b', 'c'] },
      { _id: 'h2', tags: 'z' },
      { _id: 'h3', items: [{ sku: 'y' }, { sku: 'q' }] },
      { _id: 'h4', tags: ['x'], items: [{ sku: 'w' }] },
    ];
    const holders = (fields: string[], written: Record<string, unknown>) =>
      find(held, sameKeyFilter(fields, written)!)
        .all()
        .map((d) => d._id);
    expect(sameKeyFilter(['tags'], { _id: 'n', tags: ['a', 'b'] })).to.deep.equal({
      tags: { $in: ['a', 'b'] },
    });
    expect(holders(['tags'], { _id: 'n', tags: ['a', 'b'] })).to.deep.equal(['h1']);
    expect(holders(['tags'], { _id: 'n', tags: ['z'] })).to.deep.equal(['h2']);
    expect(holders(['items.sku'], { _id: 'n', items: [{ sku: 'x' }, { sku: 'y' }] })).to.deep.equal(['h3']);
    expect(holders(['tags', 'items.sku'], { _id: 'n', tags: 'x', items: [{ sku: 'w' }, {}] })).to.deep.equal([
      'h4',
    ]);
    // A scalar stays an equality; a document without the field (or any element with it) is unconstrained.
    expect(sameKeyFilter(['a.b'], { _id: 'n', a: { b: 1 } })).to.deep.equal({ 'a.b': 1 });
    expect(sameKeyFilter(['items.sku'], { _id: 'n', items: [{}, { other: 1 }] })).to.equal(null);
  });

  it('a duplicate key on a sidecar index (a racing commit) is no declared index, whatever its name', () => {
    const duplicate = (collection: string, index: string) =>
      new MongoServerError({
        code: 11000,
        errmsg: `E11000 duplicate key error collection: folio_p_live.${collection} index: ${index} dup key: { docId: "d1", version: 2 }`,
      });
    expect(conflictingIndexName(duplicate('_folio.versions.users', 'docId_version_unique'))).to.equal(null);
    expect(conflictingIndexName(duplicate('_folio.trashVersions.users', 'docId_version_unique'))).to.equal(
      null,
    );
    // A declaration may take that name on the collection itself.
    expect(conflictingIndexName(duplicate('users', 'docId_version_unique'))).to.equal('docId_version_unique');
  });

  it('finds the documents sharing a value, ignoring those without the field', () => {
    const docs = [
      { _id: 'd1', v: 1 },
      { _id: 'd2', v: 2 },
      { _id: 'd3', v: 1 },
      { _id: 'd4' },
      { _id: 'd5' },
      { _id: 'd6', v: 1 },
    ];
    const rows = aggregate(docs, duplicatesPipeline([{ path: 'v', order: 1 }])) as Array<{ ids: string }>;
    expect(rows.map((r) => r.ids)).to.deep.equal(['d1', 'd3', 'd6']);
  });

  it('reads explain output: the declared index of the IXSCAN, a COLLSCAN as a scan, the counts', () => {
    const ixscan = planOfExplain({
      queryPlanner: {
        winningPlan: {
          stage: 'LIMIT',
          inputStage: { stage: 'FETCH', inputStage: { stage: 'IXSCAN', indexName: 'by_k' } },
        },
      },
      executionStats: { totalDocsExamined: 2, nReturned: 2 },
    });
    expect(ixscan).to.deep.equal({
      index: 'by_k',
      scan: false,
      documentsExamined: 2,
      returned: 2,
      detail: ['LIMIT', 'FETCH', 'IXSCAN by_k'],
    });
    const sbe = planOfExplain({
      queryPlanner: { winningPlan: { queryPlan: { stage: 'COLLSCAN' } } },
      executionStats: { totalDocsExamined: 40, nReturned: 1 },
    });
    expect(sbe).to.include({ index: null, scan: true, documentsExamined: 40, returned: 1 });
    // The _id index is MongoDB's own: no declared index, but not a scan either.
    const byId = planOfExplain({
      queryPlanner: { winningPlan: { stage: 'FETCH', inputStage: { stage: 'IXSCAN', indexName: '_id_' } } },
    });
    expect(byId).to.include({ index: null, scan: false, documentsExamined: 0 });
  });
});

describe('MongoDB declared indexes: the maximum counted with builds in progress (pure parts)', () => {
  const scope: DataScope = { projectId: 'prj_1', env: 'test' };
  const NOW = '2026-11-25T12:00:00.000Z';
  const LATER = '2026-11-25T12:15:00.000Z';
  const EARLIER = '2026-11-25T11:59:59.999Z';

  it('re-checked once built: more declared indexes than the maximum drops the new one', () => {
    expect(overIndexLimit(['a_1', 'b_1', 'c_1'], 3)).to.equal(false);
    expect(overIndexLimit(['a_1', 'b_1', 'c_1', 'd_1'], 3)).to.equal(true);
    expect(overIndexLimit(['a_1', 'a_1'], 1)).to.equal(false);
  });

  it('the reservation range holds the collection’s reservations and no other set’s', () => {
    const mine = ['a_1', 'b_1', 'zz'].map((name) => reservationId(scope, 'orders', name));
    const others = [
      reservationId(scope, 'orders2', 'a_1'),
      reservationId(scope, 'order', 'a_1'),
      reservationId({ ...scope, env: 'live' }, 'orders', 'a_1'),
      reservationId({ ...scope, projectId: 'prj_10' }, 'orders', 'a_1'),
      guardId({ kind: 'indexes', scope, collection: 'orders' }),
      guardId({ kind: 'webhooks', scope, collection: 'orders' }),
    ];
    const docs = [...mine, ...others].map((_id) => ({ _id, value: LATER }));
    const matched = find(docs, { _id: reservationRange(scope, 'orders') })
      .all()
      .map((d) => (d as { _id: string })._id);
    expect(matched.sort()).to.deep.equal([...mine].sort());
  });

  it('counts the catalogue and live reservations once each by name; a lapsed reservation is not counted', () => {
    const counted = countedIndexNames(
      scope,
      'orders',
      ['a_1', 'b_1'],
      [
        // Its build finished: in the catalogue and still reserved, counted once.
        { _id: reservationId(scope, 'orders', 'b_1'), value: LATER },
        { _id: reservationId(scope, 'orders', 'c_1'), value: LATER },
        // An instance that died mid-build an age ago.
        { _id: reservationId(scope, 'orders', 'd_1'), value: EARLIER },
        // Lapses exactly now: no longer counted.
        { _id: reservationId(scope, 'orders', 'e_1'), value: NOW },
        // Another collection's (never in the range, ignored all the same).
        { _id: reservationId(scope, 'orders2', 'f_1'), value: LATER },
      ],
      NOW,
    );
    expect([...counted].sort()).to.deep.equal(['a_1', 'b_1', 'c_1']);
  });

  it('the index guard of a collection is its own: not the webhook guard, not another collection’s', () => {
    const ids = [
      guardId({ kind: 'indexes', scope, collection: 'orders' }),
      guardId({ kind: 'indexes', scope, collection: 'orders2' }),
      guardId({ kind: 'indexes', scope: { ...scope, env: 'live' }, collection: 'orders' }),
      guardId({ kind: 'webhooks', scope, collection: 'orders' }),
    ];
    expect(new Set(ids).size).to.equal(ids.length);
  });
});
