/**
 * `compileFilterOnce` reuses a filter object's last compilation only while the paths it names
 * are indexed and array-free as they were, within the same collection: whatever the sequence of
 * index sets a filter meets, its SQL and parameters are those `compileFilter` gives afresh.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { parseListQuery } from '../../src/query/listQuery.js';
import {
  compileFilter,
  compileFilterOnce,
  filterText,
  MAX_CACHED_FILTER_CHARS,
} from '../../src/store/embedded/compileQuery.js';
import type { StoredFilter } from '../../src/store/port.js';

const PATHS = ['category', 'price', 'tags', 'other'] as const;
const COLLECTIONS = [null, "d.scope = 's' AND d.collection = 'c'", "d.scope = 's' AND d.collection = 'x'"];

/** Filters as the listing builds them, over a few paths with every kind of operand. */
const filterArb = fc
  .record(
    {
      'filter[category]': fc.constantFrom('a', 'b', 'null', '7'),
      'filter[category][in]': fc.constantFrom('a,b', 'a,1,true'),
      'filter[category][gt]': fc.constantFrom('a', '3'),
      'filter[price][gte]': fc.constantFrom('3', 'a'),
      'filter[price][lt]': fc.constantFrom('9.5', 'z'),
      'filter[price][neq]': fc.constantFrom('4', 'x'),
      'filter[tags][contains]': fc.constantFrom('x', 'Y'),
      'filter[other][exists]': fc.constantFrom('true', 'false'),
    },
    { requiredKeys: [] },
  )
  .map((raw) => parseListQuery(raw).filter);

const setArb = fc.subarray([...PATHS]).map((paths) => new Set<string>(paths));
const contextArb = fc.record({
  indexed: setArb,
  arrayFree: setArb,
  collection: fc.constantFrom(...COLLECTIONS),
});

/** Scalars whose texts could be mistaken for one another's (-0 and 0, NaN and null, 5 and '5'). */
const NON_STRINGS = [
  0,
  -0,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  5,
  null,
  true,
  false,
];
const STRINGS = ['5', '', 'n5', 's', 'u', 'null', 'Infinity'];

describe('compileFilterOnce', () => {
  it('gives what compileFilter gives, for one filter object met in any sequence of contexts', () => {
    fc.assert(
      fc.property(filterArb, fc.array(contextArb, { minLength: 1, maxLength: 8 }), (filter, contexts) => {
        for (const { indexed, arrayFree, collection } of contexts) {
          const fresh = compileFilter(filter, indexed, arrayFree, collection);
          expect(compileFilterOnce(filter, indexed, arrayFree, collection)).to.deep.equal(fresh);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reuses the compilation while the named paths keep their state, whatever the other paths do', () => {
    const { filter } = parseListQuery({ 'filter[category]': 'a' });
    const collection = COLLECTIONS[1]!;
    const first = compileFilterOnce(filter, new Set(['category']), new Set(['category']), collection);
    // The page asks with the sort path too; the count without it: the same compilation.
    const again = compileFilterOnce(
      filter,
      new Set(['category', 'price']),
      new Set(['category']),
      collection,
    );
    expect(again).to.equal(first);
    // The category path changed (it now holds an array): compiled again, to a different SQL.
    const changed = compileFilterOnce(filter, new Set(['category', 'price']), new Set(['price']), collection);
    expect(changed).to.not.equal(first);
    expect(changed.sql).to.not.equal(first.sql);
    // Another collection: compiled again (a two-sided range names its collection in the SQL).
    const range = parseListQuery({ 'filter[price][gte]': '3', 'filter[price][lt]': '9' }).filter;
    const here = compileFilterOnce(range, new Set(['price']), new Set(), COLLECTIONS[1]!);
    const there = compileFilterOnce(range, new Set(['price']), new Set(), COLLECTIONS[2]!);
    expect(here.sql).to.contain("'c'");
    expect(there.sql).to.contain("'x'").and.not.contain("'c'");
  });

  it('keeps apart filters that differ only in a value', () => {
    const a = parseListQuery({ 'filter[category]': 'a' }).filter;
    const b = parseListQuery({ 'filter[category]': 'b' }).filter;
    const sets = [new Set(['category']), new Set(['category'])] as const;
    const ca = compileFilterOnce(a, ...sets, COLLECTIONS[1]!);
    const cb = compileFilterOnce(b, ...sets, COLLECTIONS[1]!);
    expect(cb.params).to.not.deep.equal(ca.params);
    expect(cb).to.deep.equal(compileFilter(b, ...sets, COLLECTIONS[1]!));
  });

  it('gives what compileFilter gives across many filter objects, equal ones included', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(filterArb, contextArb), { minLength: 1, maxLength: 12 }), (asked) => {
        for (const [filter, { indexed, arrayFree, collection }] of asked) {
          // A copy: an equal filter in a new object, as the next request's parser builds it.
          const copy = structuredClone(filter);
          const fresh = compileFilter(copy, indexed, arrayFree, collection);
          expect(compileFilterOnce(copy, indexed, arrayFree, collection)).to.deep.equal(fresh);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('reuses a compilation for an equal filter in a new object, up to the longest cached text', () => {
    const collection = COLLECTIONS[1]!;
    const sets = [new Set(['category']), new Set(['category'])] as const;
    // `${collection}\0${filterText}` of {category: {$in: [value]}} is this long for a value of n chars.
    const overhead = `${collection}\0${filterText({ category: { $in: [''] } })}`.length;
    const withValue = (n: number): StoredFilter => ({ category: { $in: ['v'.repeat(n)] } });
    const atLimit = MAX_CACHED_FILTER_CHARS - overhead;
    const first = compileFilterOnce(withValue(atLimit), ...sets, collection);
    expect(compileFilterOnce(withValue(atLimit), ...sets, collection)).to.equal(first);
    const over = compileFilterOnce(withValue(atLimit + 1), ...sets, collection);
    const overAgain = compileFilterOnce(withValue(atLimit + 1), ...sets, collection);
    expect(overAgain).to.not.equal(over);
    expect(overAgain).to.deep.equal(over);
  });

  it('writes every pair of distinct scalars apart, JSON look-alikes included', () => {
    const scalars = [...NON_STRINGS, ...STRINGS, '0', undefined];
    for (const x of scalars) {
      for (const y of scalars) {
        const same =
          filterText({ a: { $in: [x] } } as StoredFilter) === filterText({ a: { $in: [y] } } as StoredFilter);
        const member =
          filterText({ a: { $gt: x } } as StoredFilter) === filterText({ a: { $gt: y } } as StoredFilter);
        expect(same, `${String(x)} / ${String(y)}`).to.equal(Object.is(x, y));
        expect(member, `${String(x)} / ${String(y)}`).to.equal(Object.is(x, y));
      }
    }
  });

  it('gives a value that is not JSON a text of its own, so it is never reused', () => {
    const odd = { a: { $in: [1n] } } as unknown as StoredFilter;
    expect(filterText(odd)).to.not.equal(filterText(odd));
  });

  it('writes two filters as one text only when they are the same value', () => {
    const scalar = fc.oneof(
      fc.constantFrom(...NON_STRINGS),
      fc.constantFrom(...STRINGS),
      fc.constant(undefined),
    );
    const filter = fc.dictionary(
      fc.constantFrom('a', 'b'),
      fc.dictionary(fc.constantFrom('$in', '$gt'), fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }))),
    );
    fc.assert(
      fc.property(filter, filter, (a, b) => {
        expect(filterText(a as StoredFilter) === filterText(b as StoredFilter)).to.equal(sameValue(a, b));
      }),
      { numRuns: 2000 },
    );
  });
});

/** Deep equality with `Object.is` for scalars and key order kept, undefined members included. */
function sameValue(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return Object.is(a, b);
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length || ka.some((k, i) => k !== kb[i])) return false;
  return ka.every((k) => sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
