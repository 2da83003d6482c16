/** Identifiers (src/ids.ts): prefixed, unique, in creation order, random from a pooled source. */
import { expect } from 'chai';
import { newId, pooledRandom } from '../../src/ids.js';

describe('identifiers', () => {
  it('are prefixed, unique and sort in creation order', () => {
    const ids = Array.from({ length: 20_000 }, () => newId('doc'));
    expect(ids.every((id) => /^doc_[0-9A-HJKMNP-TV-Z]{26}$/.test(id))).to.equal(true);
    expect(new Set(ids).size).to.equal(ids.length);
    expect([...ids].sort()).to.deep.equal(ids);
  });

  it('draw their randomness from a pool that is refilled, not replayed, when it runs out', () => {
    const random = pooledRandom(16);
    const draws = Array.from({ length: 16 * 64 }, random);
    expect(draws.every((x) => x >= 0 && x < 1 && Number.isInteger(x * 256))).to.equal(true);
    const pools = new Set(Array.from({ length: 64 }, (_, i) => draws.slice(i * 16, i * 16 + 16).join(',')));
    expect(pools.size, 'each refill is fresh bytes').to.equal(64);
    // Every one of ulid's 32 characters is reachable (value × 32, floored).
    expect(new Set(draws.map((x) => Math.floor(x * 32))).size).to.equal(32);
  });
});
