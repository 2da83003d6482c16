import { expect } from 'chai';
import { sampleSequentially } from '../../bench/stats.js';

describe('bench sampling (sampleSequentially)', () => {
  const counting = (ms: number) => {
    let calls = 0;
    const measure = async () => {
      calls += 1;
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      return 100 - calls;
    };
    return { measure, calls: () => calls };
  };

  it('takes `max` samples when they fit in the budget, ascending', async () => {
    const m = counting(0);
    const samples = await sampleSequentially(m.measure, { max: 50, min: 5, budgetMs: 10_000 });
    expect(m.calls()).to.equal(50);
    expect(samples[0]).to.equal(50);
    expect(samples.at(-1)).to.equal(99);
  });

  it('stops at the budget once `min` are in', async () => {
    const m = counting(20);
    await sampleSequentially(m.measure, { max: 200, min: 3, budgetMs: 100 });
    // About 100 ms / 20 ms per sample: never all 200, never fewer than 3.
    expect(m.calls()).to.be.within(3, 8);
  });

  it('takes `min` however long they take', async () => {
    const m = counting(20);
    await sampleSequentially(m.measure, { max: 200, min: 6, budgetMs: 1 });
    expect(m.calls()).to.equal(6);
  });
});
