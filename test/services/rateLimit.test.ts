import { expect } from 'chai';
import { retryAfterSeconds } from '../../src/services/rateLimit.js';

describe('rate limit Retry-After', () => {
  it('is the whole seconds until the window resets, rounded up, and never below 1', () => {
    const reset = 1_000_000;
    expect(retryAfterSeconds(reset, reset - 1)).to.equal(1);
    expect(retryAfterSeconds(reset, reset - 1000)).to.equal(1);
    expect(retryAfterSeconds(reset, reset - 1001)).to.equal(2);
    expect(retryAfterSeconds(reset, reset - 60_000)).to.equal(60);
    // At or past the reset (a clock that moved between the count and the answer): still 1.
    expect(retryAfterSeconds(reset, reset)).to.equal(1);
    expect(retryAfterSeconds(reset, reset + 500)).to.equal(1);
  });
});
