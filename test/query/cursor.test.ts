/** Which rows a cursor can point at, and the keyset it becomes (the walk itself: test/http/cursorPagination.test.ts). */
import { expect } from 'chai';
import { Query } from 'mingo';
import {
  cursorAfter,
  keysetFilter,
  keysetPosition,
  MAX_KEY_LENGTH,
} from '../../src/store/documentQuery/cursor.js';
import type { FindQuery, JsonObject } from '../../src/store/port.js';
import { toMingoFilter } from './mingoOracle.js';

const sort: FindQuery['sort'] = [
  ['s', 1],
  ['_id', 1],
];

describe('cursors', () => {
  it(`carries a string key of up to ${MAX_KEY_LENGTH} characters; a longer one gives no cursor`, () => {
    expect(cursorAfter({ _id: 'doc_1', s: 'x'.repeat(MAX_KEY_LENGTH) }, sort)).to.be.a('string');
    expect(cursorAfter({ _id: 'doc_1', s: 'x'.repeat(MAX_KEY_LENGTH + 1) }, sort)).to.equal(null);
  });

  it('a metadata key of the wrong type is 400 invalid_query (it never comes from meta.next)', () => {
    const versionSort: FindQuery['sort'] = [
      ['_folio.version', 1],
      ['_id', 1],
    ];
    const forged = (k: unknown) =>
      Buffer.from(JSON.stringify({ s: versionSort, k: [k], id: 'doc_1' })).toString('base64url');
    expect(keysetPosition(forged(3), versionSort)).to.deep.equal({ keys: [3], id: 'doc_1' });
    for (const k of ['3', null, true]) {
      expect(() => keysetPosition(forged(k), versionSort), JSON.stringify(k))
        .to.throw()
        .with.property('code', 'invalid_query');
    }
  });

  it('gives no cursor for a row whose key is an object, an empty array or a nested array', () => {
    for (const s of [{ a: 1 }, [], [[1]]])
      expect(cursorAfter({ _id: 'doc_1', s }, sort), JSON.stringify(s)).to.equal(null);
    // A leaf array of scalars is fine: its key is its smallest element ascending.
    expect(cursorAfter({ _id: 'doc_1', s: [3, 1] }, sort)).to.be.a('string');
  });

  it('the keyset selects exactly the rows after the cursor row in MongoDB order (mingo)', () => {
    const rows: JsonObject[] = [
      { _id: 'a' },
      { _id: 'b', s: null },
      { _id: 'c', s: 2 },
      { _id: 'd', s: [5, 1] },
      { _id: 'e', s: 1 },
      { _id: 'f', s: 'z' },
      { _id: 'g', s: true },
      { _id: 'h', s: ['b', 9] },
    ];
    const ordered = new Query({})
      .find(rows.map((r) => ({ ...r, k: keyOf(r) })))
      .sort({ k: 1, _id: 1 })
      .all() as JsonObject[];
    const ids = ordered.map((r) => r._id as string);
    expect(ids).to.deep.equal(['a', 'b', 'd', 'e', 'c', 'h', 'f', 'g']);
    for (const [i, row] of ordered.entries()) {
      const cursor = cursorAfter(rows.find((r) => r._id === row._id)!, sort)!;
      const matched = new Query(toMingoFilter(keysetFilter(cursor, sort))).find(rows).all() as JsonObject[];
      const after = matched.map((r) => r._id as string);
      expect(after.sort(), `after ${row._id}`).to.deep.equal(ids.slice(i + 1).sort());
    }
  });
});

/** MongoDB's ascending sort key for these rows: missing is null, an array sorts by its smallest element. */
function keyOf(row: JsonObject): unknown {
  const s = row.s;
  if (!Array.isArray(s)) return s ?? null;
  const sorted = new Query({})
    .find(s.map((v) => ({ v })))
    .sort({ v: 1 })
    .all() as JsonObject[];
  return sorted[0]!.v;
}
