import { expect } from 'chai';
import { judgeFloors } from '../../bench/floors.js';
import { pairedRatio, spread, summary } from '../../bench/stats.js';
import type { ThroughputRow } from '../../bench/throughput.js';
import type { TransferFigures } from '../../bench/transfer.js';
import { RAW, RESTRICTED, WORKLOADS } from '../../bench/workloads/targets.js';

const m = (median: number) => ({ median, spread: 0.1 });

/** A run where Folio's CPU per request is `folioCpu` on every workload, raw's 100, Parse's req/s `parseRps` (Folio's 1,000). */
function rows(folioCpu: number, parseRps: number): ThroughputRow[] {
  return Object.values(WORKLOADS).flatMap((workload) =>
    [
      ['Folio', folioCpu, 1000],
      [RAW, 100, 1000],
      ['Parse Server', 1000, parseRps],
    ].map(([system, cpu, rps]) => ({
      system: system as string,
      workload,
      requestsPerSecond: m(rps as number),
      cpuMicrosPerRequest: m(cpu as number),
      p50Ms: 1,
      p99Ms: 2,
      failed: 0,
    })),
  );
}

/** Folio's times `factor` × raw's on every one-shot workload, its export adding `addedMiB`. */
function transfer(factor: number, addedMiB: number): TransferFigures {
  const oneShot = { folio: m(100 * factor), raw: m(100), folioCpuMs: 1 };
  const exported = { format: 'NDJSON', ms: m(1), firstByteMs: 1, mib: 70, addedMiB, cpuMs: 1 };
  return {
    importNdjson: oneShot,
    importCsv: oneShot,
    bulk: oneShot,
    exportNdjson: oneShot,
    exports: [exported],
    cliMs: 1,
  };
}

const results = (verdicts: ReturnType<typeof judgeFloors>) =>
  Object.fromEntries(verdicts.map((v) => [v.floor, v.pass]));

describe('bench floors (issue 42)', () => {
  it('reads pass at 2 × raw’s CPU and fail above; writes pass at 1 × and fail above', () => {
    const at = (cpu: number) => results(judgeFloors(rows(cpu, 100), undefined));
    expect(at(200)[`${WORKLOADS.get}: server CPU per request ÷ ${RAW}`]).to.equal(true);
    expect(at(201)[`${WORKLOADS.count}: server CPU per request ÷ ${RAW}`]).to.equal(false);
    expect(at(100)[`${WORKLOADS.post}: server CPU per request ÷ ${RAW}`]).to.equal(true);
    expect(at(101)[`${WORKLOADS.patch}: server CPU per request ÷ ${RAW}`]).to.equal(false);
  });

  it('Parse Server: 4 × its req/s passes, less fails, and a skipped Parse is not measured, with why', () => {
    expect(
      results(judgeFloors(rows(100, 250), undefined))[`${WORKLOADS.list}: req/s ÷ Parse Server`],
    ).to.equal(true);
    expect(
      results(judgeFloors(rows(100, 251), undefined))[`${WORKLOADS.get}: req/s ÷ Parse Server`],
    ).to.equal(false);
    const noParse = rows(100, 250).filter((r) => r.system !== 'Parse Server');
    const skipped = judgeFloors(noParse, undefined, 'PostgreSQL is not installed');
    const parse = skipped.filter((v) => v.floor.includes('Parse'));
    expect(parse.map((v) => v.pass)).to.deep.equal([null, null, null, null, null]);
    expect(parse[0]?.other).to.contain('PostgreSQL is not installed');
  });

  it('import passes at 0.6 × raw’s rate, bulk at 2 × its time, export at 2.5 × and 64 MiB', () => {
    const at = (factor: number, mib = 10) => judgeFloors(rows(100, 100), transfer(factor, mib));
    const pass = (verdicts: ReturnType<typeof judgeFloors>, prefix: string) =>
      verdicts.find((v) => v.floor.startsWith(prefix))?.pass;
    expect(pass(at(1 / 0.6), 'import NDJSON')).to.equal(true);
    expect(pass(at(1.7), 'import CSV')).to.equal(false);
    expect(pass(at(2), 'bulk of 100')).to.equal(true);
    expect(pass(at(2.1), 'bulk of 100')).to.equal(false);
    expect(pass(at(2.5), 'export NDJSON')).to.equal(true);
    expect(pass(at(1, 64), 'export, every format')).to.equal(true);
    expect(pass(at(1, 65), 'export, every format')).to.equal(false);
  });

  it('a restricted key (issue 45) passes at 1.2 × an unrestricted key’s CPU on GET and the list, fails above', () => {
    const at = (cpu: number) => {
      const restricted = rows(100, 100)
        .filter(
          (r) => r.system === 'Folio' && (r.workload === WORKLOADS.get || r.workload === WORKLOADS.list),
        )
        .map((r) => ({ ...r, system: RESTRICTED, cpuMicrosPerRequest: m(cpu) }));
      return results(judgeFloors([...rows(100, 100), ...restricted], undefined));
    };
    expect(at(120)[`${WORKLOADS.get}: server CPU per request, restricted key ÷ unrestricted`]).to.equal(true);
    expect(at(121)[`${WORKLOADS.list}: server CPU per request, restricted key ÷ unrestricted`]).to.equal(
      false,
    );
  });

  it('a floor whose figures are missing is not measured, never passed', () => {
    const verdicts = judgeFloors([], undefined);
    expect(verdicts.every((v) => v.pass === null)).to.equal(true);
  });

  it('a ratio pairs the rounds measured back to back: a round slow on both sides moves it not', () => {
    const ratio = pairedRatio(summary([100, 300, 110]), summary([50, 150, 50]));
    expect(ratio.median).to.equal(2);
    expect(ratio.spread).to.be.closeTo(0.1, 1e-9);
    expect(pairedRatio({ median: 3, spread: 0 }, { median: 2, spread: 0 }).median).to.equal(1.5);
  });

  it('the spread is (max − min) ÷ median, NaN with fewer than two rounds', () => {
    expect(spread([90, 100, 110])).to.be.closeTo(0.2, 1e-9);
    expect(spread([100])).to.be.NaN;
  });
});
