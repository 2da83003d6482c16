import { expect } from 'chai';
import { equivalentWork, type WorkLevel } from '../../bench/workBudget.js';

/** The ratio of a slowdown `y` (1 / ratio − 1 = y). */
const ratioOf = (y: number) => 1 / (1 + y);

// Slowdowns 0.5 at 20 µs and 1.5 at 60 µs: 0 → 20 µs rises 0.025 per µs, 20 → 60 µs 0.025 too.
const levels: WorkLevel[] = [
  { workMicros: 60, ratio: ratioOf(1.5) },
  { workMicros: 20, ratio: ratioOf(0.5) },
];

describe('bench work budget (workBudget)', () => {
  it('reads a ratio between bare Koa and the first level on the line from bare Koa', () => {
    expect(equivalentWork(ratioOf(0.25), levels)).to.deep.equal({ micros: 10, extrapolated: false });
  });

  it('reads a ratio between two levels on the line joining them, whatever their order', () => {
    const bent: WorkLevel[] = [
      { workMicros: 60, ratio: ratioOf(0.9) },
      { workMicros: 20, ratio: ratioOf(0.5) },
    ];
    // 0.5 → 0.9 over 20 → 60 µs: 0.7 is half way, 40 µs.
    const { micros, extrapolated } = equivalentWork(ratioOf(0.7), bent);
    expect(micros).to.be.closeTo(40, 1e-9);
    expect(extrapolated).to.equal(false);
    // On a level exactly: that level's work.
    expect(equivalentWork(ratioOf(0.9), bent).micros).to.be.closeTo(60, 1e-9);
  });

  it('turns the targets into budgets', () => {
    // 0.6 × is a slowdown of 2/3: 2/3 ÷ 0.025 per µs.
    expect(equivalentWork(0.6, levels).micros).to.be.closeTo(26.667, 1e-3);
  });

  it('extrapolates beyond the highest level along the last segment, and says so', () => {
    const { micros, extrapolated } = equivalentWork(ratioOf(2), levels);
    expect(micros).to.be.closeTo(80, 1e-9);
    expect(extrapolated).to.equal(true);
  });

  it('reads no added work into a ratio of 1 or more', () => {
    expect(equivalentWork(1, levels)).to.deep.equal({ micros: 0, extrapolated: false });
    expect(equivalentWork(1.2, levels).micros).to.equal(0);
  });

  it('leaves out unusable levels and says NaN when none is left', () => {
    expect(equivalentWork(0.6, []).micros).to.be.NaN;
    expect(equivalentWork(0.6, [{ workMicros: 0, ratio: 0.5 }]).micros).to.be.NaN;
    expect(equivalentWork(0.6, [{ workMicros: 20, ratio: Number.NaN }]).micros).to.be.NaN;
    expect(equivalentWork(0.6, [{ workMicros: 20, ratio: 0 }]).micros).to.be.NaN;
    const one = equivalentWork(ratioOf(0.25), [{ workMicros: 20, ratio: Number.NaN }, levels[1]!]);
    expect(one.micros).to.be.closeTo(10, 1e-9);
    expect(equivalentWork(Number.NaN, levels).micros).to.be.NaN;
    expect(equivalentWork(0, levels).micros).to.be.NaN;
  });

  it('skips a segment noise made fall, and does not extrapolate from one', () => {
    const noisy: WorkLevel[] = [
      { workMicros: 20, ratio: ratioOf(0.8) },
      { workMicros: 60, ratio: ratioOf(0.6) },
    ];
    expect(equivalentWork(ratioOf(0.4), noisy).micros).to.be.closeTo(10, 1e-9);
    expect(equivalentWork(ratioOf(0.9), noisy).micros).to.be.NaN;
  });
});
