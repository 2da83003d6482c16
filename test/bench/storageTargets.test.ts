import { expect } from 'chai';
import {
  judgeOneShot,
  judgeTargets,
  type Lookup,
  ONE_SHOT_TARGETS,
  oneShotLine,
  STORAGE_TARGETS,
  spread,
  verdictLine,
} from '../../bench/storageTargets.js';

/** A run in which Folio's figures are `folio` and raw's are `raw` on every workload. */
function run(folio: { rps: number; cpu: number }, raw: { rps: number; cpu: number }): Lookup {
  return (system) =>
    system === 'Folio'
      ? { requestsPerSecond: folio.rps, cpuMicrosPerRequest: folio.cpu }
      : system === 'raw better-sqlite3'
        ? { requestsPerSecond: raw.rps, cpuMicrosPerRequest: raw.cpu }
        : undefined;
}

describe('bench storage targets', () => {
  const getCpu = STORAGE_TARGETS.filter((t) => t.workload === 'GET by id' && t.measure === 'cpu');
  const getRps = STORAGE_TARGETS.filter(
    (t) => t.workload === 'GET by id' && t.measure === 'throughput' && t.versus === 'raw better-sqlite3',
  );

  it('CPU per request is met at exactly 1.5 × raw on GET and missed just above it', () => {
    expect(judgeTargets(run({ rps: 1, cpu: 150 }, { rps: 1, cpu: 100 }), getCpu)[0]?.met).to.equal(true);
    expect(judgeTargets(run({ rps: 1, cpu: 150.1 }, { rps: 1, cpu: 100 }), getCpu)[0]?.met).to.equal(false);
  });

  it('throughput is met at exactly 0.7 × raw on GET and missed just below it', () => {
    expect(judgeTargets(run({ rps: 700, cpu: 1 }, { rps: 1000, cpu: 1 }), getRps)[0]?.met).to.equal(true);
    expect(judgeTargets(run({ rps: 699, cpu: 1 }, { rps: 1000, cpu: 1 }), getRps)[0]?.met).to.equal(false);
  });

  it('POST create must use no more CPU than raw and reach 1.5 × its throughput', () => {
    const post = STORAGE_TARGETS.filter(
      (t) => t.workload === 'POST create' && t.versus === 'raw better-sqlite3',
    );
    const verdicts = judgeTargets(run({ rps: 1500, cpu: 100 }, { rps: 1000, cpu: 100 }), post);
    expect(verdicts.map((v) => v.met)).to.deep.equal([true, true]);
    const over = judgeTargets(run({ rps: 1499, cpu: 101 }, { rps: 1000, cpu: 100 }), post);
    expect(over.map((v) => v.met)).to.deep.equal([false, false]);
  });

  it('a peer that did not run is "not measured", never met', () => {
    const parse = STORAGE_TARGETS.filter((t) => t.versus === 'Parse Server');
    expect(parse).to.have.length(5);
    const verdicts = judgeTargets(run({ rps: 1, cpu: 1 }, { rps: 1, cpu: 1 }), parse);
    expect(verdicts.every((v) => v.met === null)).to.equal(true);
    expect(verdictLine(verdicts[0] as (typeof verdicts)[number])).to.contain('not measured');
  });

  it('spread is (max − min) ÷ median over the finite rounds', () => {
    expect(spread([90, 100, 120])).to.be.closeTo(0.3, 1e-12);
    expect(spread([100, 100])).to.equal(0);
    expect(spread([100, Number.NaN])).to.be.NaN;
    expect(spread([80, 100, 110, 120])).to.be.closeTo(40 / 105, 1e-12);
  });
});

describe('bench one-shot targets', () => {
  const one = (name: string) => ONE_SHOT_TARGETS.filter((t) => t.name === name);
  const judged = (name: string, folio: number, raw: number) =>
    judgeOneShot(new Map([[name, { folio, raw }]]), one(name))[0]?.met;

  it('imports (NDJSON and CSV) are met at exactly 0.4 × raw’s documents per second, missed just below', () => {
    for (const name of ['import NDJSON', 'import CSV']) {
      expect(judged(name, 400, 1000)).to.equal(true);
      expect(judged(name, 399, 1000)).to.equal(false);
    }
  });

  it('export and bulk are met at exactly 2.5 × raw’s time, missed just above', () => {
    for (const name of ['export NDJSON', 'bulk of 100']) {
      expect(judged(name, 2.5, 1)).to.equal(true);
      expect(judged(name, 2.51, 1)).to.equal(false);
    }
  });

  it('a figure not measured is reported so, never met', () => {
    const [verdict] = judgeOneShot(
      new Map([['bulk of 100', { folio: 3, raw: undefined }]]),
      one('bulk of 100'),
    );
    expect(verdict?.met).to.equal(null);
    expect(oneShotLine(verdict!)).to.match(/\| n\/a \| not measured \|$/);
  });
});
