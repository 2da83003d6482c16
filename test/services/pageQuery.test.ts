import { expect } from 'chai';
import fc from 'fast-check';
import { AppError } from '../../src/errors.js';
import { DEFAULT_PAGE_LIMIT, parsePageQuery } from '../../src/services/pageQuery.js';

const refusal = (query: Record<string, unknown>, maxLimit = 100) => {
  try {
    parsePageQuery(query, maxLimit);
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    const e = error as AppError;
    expect(e.status).to.equal(400);
    expect(e.code).to.equal('invalid_query');
    return e.details?.param;
  }
  throw new Error(`accepted ${JSON.stringify(query)}`);
};

describe('parsePageQuery (trash and schema-violation lists)', () => {
  it('defaults the limit and takes one up to the maximum, not one past it', () => {
    expect(parsePageQuery({}, 100)).to.deep.equal({ limit: DEFAULT_PAGE_LIMIT, after: undefined });
    expect(parsePageQuery({ limit: '1' }, 100).limit).to.equal(1);
    expect(parsePageQuery({ limit: '100' }, 100).limit).to.equal(100);
    expect(refusal({ limit: '101' }, 100)).to.equal('limit');
    expect(refusal({ limit: '0' })).to.equal('limit');
    expect(refusal({ limit: '01' })).to.equal('limit');
    expect(refusal({ limit: '1e2' })).to.equal('limit');
    // Seven digits are refused before they are read as a number, whatever the maximum.
    expect(parsePageQuery({ limit: '999999' }, 1_000_000).limit).to.equal(999_999);
    expect(refusal({ limit: '1000000' }, 10_000_000)).to.equal('limit');
    expect(refusal({ limit: ['5', '6'] })).to.equal('limit');
  });

  it('passes `after` through as given; an empty or repeated one is refused', () => {
    expect(parsePageQuery({ after: 'abc', limit: '5' }, 100)).to.deep.equal({ limit: 5, after: 'abc' });
    expect(refusal({ after: '' })).to.equal('after');
    expect(refusal({ after: ['a', 'b'] })).to.equal('after');
  });

  it('names an unknown parameter (cut to 100 characters)', () => {
    expect(refusal({ offset: '3' })).to.equal('offset');
    expect(refusal({ ['x'.repeat(300)]: '1' })).to.equal('x'.repeat(100));
  });

  it('never accepts a limit outside 1..max, whatever the text', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 5000 }), (text, max) => {
        let limit: number;
        try {
          limit = parsePageQuery({ limit: text }, max).limit;
        } catch (error) {
          return error instanceof AppError && error.status === 400;
        }
        return Number.isInteger(limit) && limit >= 1 && limit <= max && String(limit) === text;
      }),
    );
  });
});
