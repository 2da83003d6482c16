import { expect } from 'chai';
import fc from 'fast-check';
import { isoNow } from '../src/ids.js';

describe('isoNow: ISO 8601 UTC text of a millisecond', () => {
  it('is toISOString of the millisecond asked, whatever came before (the last one is kept)', () => {
    // Runs of the same millisecond and jumps between them, as a bulk request's writes make.
    const instant = fc.integer({ min: -8.64e15, max: 8.64e15 });
    fc.assert(
      fc.property(fc.array(fc.tuple(instant, fc.integer({ min: 1, max: 3 })), { maxLength: 30 }), (runs) => {
        for (const [ms, times] of runs)
          for (let i = 0; i < times; i++) expect(isoNow(ms)).to.equal(new Date(ms).toISOString());
      }),
      { numRuns: 200 },
    );
  });

  it('tells neighbouring milliseconds apart, and reads the clock when given none', () => {
    expect(isoNow(1_000)).to.equal('1970-01-01T00:00:01.000Z');
    expect(isoNow(1_001)).to.equal('1970-01-01T00:00:01.001Z');
    expect(isoNow(1_000)).to.equal('1970-01-01T00:00:01.000Z');
    const before = Date.now();
    const now = Date.parse(isoNow());
    expect(now).to.be.within(before, Date.now());
  });

  it('throws for a time no Date can hold, as toISOString does, each time', () => {
    expect(() => isoNow(Number.NaN)).to.throw(RangeError);
    expect(() => isoNow(Number.NaN)).to.throw(RangeError);
    expect(() => isoNow(8.64e15 + 1)).to.throw(RangeError);
  });
});
