/**
 * `compileFilterOnce` reuses a filter object's last compilation only while the paths it names
 * are indexed and array-free as they were, within the same collection: whatever the sequence of
 * index sets a filter meets, its SQL and parameters are those `compileFilter` gives afresh.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { parseListQuery } from '../../src/query/listQuery.js';
import { compileFilter, compileFilterOnce } from '../../src/store/embedded/compileQuery.js';

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

  it('never reuses across filter objects, even equal ones that differ in a value', () => {
    const a = parseListQuery({ 'filter[category]': 'a' }).filter;
    const b = parseListQuery({ 'filter[category]': 'b' }).filter;
    const sets = [new Set(['category']), new Set(['category'])] as const;
    const ca = compileFilterOnce(a, ...sets, COLLECTIONS[1]!);
    const cb = compileFilterOnce(b, ...sets, COLLECTIONS[1]!);
    expect(cb.params).to.not.deep.equal(ca.params);
    expect(cb).to.deep.equal(compileFilter(b, ...sets, COLLECTIONS[1]!));
  });
});
