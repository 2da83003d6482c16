/**
 * The soak's "p99 stable" rule, as a pure function so its own test can show it fails: the run
 * is cut into equal windows by when each request started; the first is the warm-up and is not
 * judged; the first window after it is the baseline; every later window's p99 must stay within
 * `factor` × the baseline (or `slackMs` above it, whichever is larger). Requests in flight
 * during a pause the test itself caused (the heap snapshot that forces a full collection) are
 * left out by time, so the window holding the pause is still judged on the rest of its requests.
 */

export interface Latency {
  /** When the request started, in ms from the start of the load. */
  at: number;
  /** How long it took to answer, in ms. */
  ms: number;
}

export interface Pause {
  from: number;
  to: number;
}

export interface WindowVerdict {
  window: number;
  p99: number;
  requests: number;
  bound: number;
  /** Within its bound, and judged on at least one request (an empty window is no evidence). */
  ok: boolean;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** The window a request started in; one started at the very end belongs to the last. */
export function windowOf(at: number, loadMs: number, windows: number): number {
  return Math.min(windows - 1, Math.max(0, Math.floor(at / (loadMs / windows))));
}

const overlaps = (latency: Latency, pause: Pause) =>
  latency.at < pause.to && latency.at + latency.ms > pause.from;

/** The latencies of each window, less those in flight during one of `pauses`. */
export function latencyWindows(
  latencies: readonly Latency[],
  pauses: readonly Pause[],
  loadMs: number,
  windows: number,
): number[][] {
  const byWindow: number[][] = Array.from({ length: windows }, () => []);
  for (const latency of latencies) {
    if (pauses.some((pause) => overlaps(latency, pause))) continue;
    byWindow[windowOf(latency.at, loadMs, windows)]?.push(latency.ms);
  }
  return byWindow;
}

/**
 * Every judged window (from the second after the warm-up on) with its p99, its bound and whether
 * it holds. Needs at least three windows.
 */
export function judgeWindows(
  byWindow: readonly number[][],
  factor: number,
  slackMs: number,
): { baseline: number; verdicts: WindowVerdict[] } {
  if (byWindow.length < 3) throw new Error('at least three windows: warm-up, baseline, one judged');
  const baseline = percentile(byWindow[1] ?? [], 99);
  // No baseline is no evidence either way: say so, rather than fail every window against NaN.
  if (Number.isNaN(baseline)) throw new Error('no requests left to judge in the baseline window');
  const bound = Math.max(factor * baseline, baseline + slackMs);
  const verdicts = byWindow.slice(2).map((values, i) => {
    const p99 = percentile(values, 99);
    return { window: i + 2, p99, requests: values.length, bound, ok: values.length > 0 && p99 <= bound };
  });
  return { baseline, verdicts };
}
