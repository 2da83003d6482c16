import { expect } from 'chai';
import { judgeWindows, type Latency, latencyWindows, percentile, windowOf } from './latencyWindows.js';

/** `perWindow` requests in each of `windows` windows of 10 s, each taking `ms(window, i)`. */
function load(windows: number, perWindow: number, ms: (window: number, i: number) => number): Latency[] {
  const out: Latency[] = [];
  for (let w = 0; w < windows; w++)
    for (let i = 0; i < perWindow; i++) out.push({ at: w * 10_000 + (i * 10_000) / perWindow, ms: ms(w, i) });
  return out;
}

const failing = (verdicts: ReturnType<typeof judgeWindows>['verdicts']) =>
  verdicts.filter((v) => !v.ok).map((v) => v.window);

describe('soak p99 rule (latencyWindows)', () => {
  it('takes the p99 as the value below which 99 % of the values fall', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 99)).to.equal(100);
    expect(percentile(values.slice(0, 99), 99)).to.equal(99);
    expect(percentile([], 99)).to.be.NaN;
  });

  it('puts a request in the window it started in, and one at the very end in the last', () => {
    expect(windowOf(0, 60_000, 6)).to.equal(0);
    expect(windowOf(9_999, 60_000, 6)).to.equal(0);
    expect(windowOf(10_000, 60_000, 6)).to.equal(1);
    expect(windowOf(60_000, 60_000, 6)).to.equal(5);
  });

  it('passes a steady run, and a slow warm-up', () => {
    const latencies = load(6, 400, (w, i) => (w === 0 ? 500 : 5 + (i % 7)));
    const { baseline, verdicts } = judgeWindows(latencyWindows(latencies, [], 60_000, 6), 3, 50);
    expect(baseline).to.equal(11);
    expect(verdicts.map((v) => v.window)).to.deep.equal([2, 3, 4, 5]);
    expect(failing(verdicts)).to.deep.equal([]);
  });

  it('fails a stall in a middle window, not only in the last', () => {
    // Window 3 of 6: 2 % of its requests (8 of 400) take a second.
    const latencies = load(6, 400, (w, i) => (w === 3 && i % 50 === 0 ? 1000 : 5));
    expect(failing(judgeWindows(latencyWindows(latencies, [], 60_000, 6), 3, 50).verdicts)).to.deep.equal([
      3,
    ]);
  });

  it('fails a window one request above the bound, and passes one at it', () => {
    // Baseline p99 5 ms: bound max(3 × 5, 5 + 50) = 55 ms; 5 slow requests of 400 make the p99.
    const at = (slow: number) => load(3, 400, (w, i) => (w === 2 && i < 5 ? slow : 5));
    expect(failing(judgeWindows(latencyWindows(at(55), [], 30_000, 3), 3, 50).verdicts)).to.deep.equal([]);
    expect(failing(judgeWindows(latencyWindows(at(56), [], 30_000, 3), 3, 50).verdicts)).to.deep.equal([2]);
  });

  it('leaves out the requests in flight during a pause, and judges the rest of that window', () => {
    // A 1.5 s pause 25 s in: requests started in it, or started before it and still waiting, are slow.
    const pause = { from: 25_000, to: 26_500 };
    const latencies = load(6, 400, (w, i) => {
      const at = w * 10_000 + (i * 10_000) / 400;
      return at >= 24_990 && at < pause.to ? pause.to - at + 5 : 5;
    });
    expect(failing(judgeWindows(latencyWindows(latencies, [], 60_000, 6), 3, 50).verdicts)).to.deep.equal([
      2,
    ]);
    const windows = latencyWindows(latencies, [pause], 60_000, 6);
    expect(windows[2]?.length).to.be.within(330, 345);
    expect(failing(judgeWindows(windows, 3, 50).verdicts)).to.deep.equal([]);
    // A stall after the pause in the same window is still caught.
    const later = latencies.map((l) => (l.at >= 28_000 && l.at < 28_200 ? { ...l, ms: 900 } : l));
    expect(failing(judgeWindows(latencyWindows(later, [pause], 60_000, 6), 3, 50).verdicts)).to.deep.equal([
      2,
    ]);
  });

  it('refuses to judge against a baseline window with no requests left', () => {
    const latencies = load(3, 100, () => 5).filter((l) => l.at < 10_000 || l.at >= 20_000);
    expect(() => judgeWindows(latencyWindows(latencies, [], 30_000, 3), 3, 50)).to.throw(/baseline/);
  });

  it('fails a judged window with no requests left to judge', () => {
    const latencies = load(3, 100, () => 5).filter((l) => l.at < 20_000);
    expect(failing(judgeWindows(latencyWindows(latencies, [], 30_000, 3), 3, 50).verdicts)).to.deep.equal([
      2,
    ]);
  });
});
