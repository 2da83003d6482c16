/** Summary statistics shared by the bench scripts. */
import { sized } from './workloads/rows.js';

/** The `p`th percentile of ascending `sorted` (nearest rank); NaN when empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** How many requests a latency row takes: `max`, or fewer once `budgetMs` passed and `min` are in. */
export interface SamplePlan {
  max: number;
  min: number;
  budgetMs: number;
}

/**
 * Latencies of `measure` run one after another, ascending. A query that takes hundreds of ms
 * (one without its index) stops at the budget, so it costs the bench seconds instead of a
 * minute; its p99 then rests on fewer samples (with under 100, it is the slowest).
 */
export async function sampleSequentially(
  measure: () => Promise<number>,
  plan: SamplePlan,
): Promise<number[]> {
  const samples: number[] = [];
  const started = performance.now();
  while (
    samples.length < plan.max &&
    (samples.length < plan.min || performance.now() - started < plan.budgetMs)
  ) {
    samples.push(await measure());
  }
  return samples.sort((a, b) => a - b);
}

/** What the query tables take per row: up to 200 requests, 5 s, at least 20. */
export const QUERY_SAMPLES: SamplePlan = { max: sized(200, 30), min: sized(20, 10), budgetMs: 5000 };

/** "up to 200 sequential requests per query (at least 20, for 5 s at most)". */
export function samplesText(plan: SamplePlan): string {
  return `up to ${plan.max} sequential requests per query (at least ${plan.min}, for ${plan.budgetMs / 1000} s at most)`;
}

/** The median of `values` (the upper one of an even count). */
export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

/**
 * How much a figure varied across the rounds of one run: (max − min) ÷ median, so a reader can
 * tell a difference between systems from noise. NaN with fewer than two finite rounds.
 */
export function spread(values: readonly number[]): number {
  const finite = values.filter(Number.isFinite);
  if (finite.length < 2) return Number.NaN;
  return (Math.max(...finite) - Math.min(...finite)) / median(finite);
}

/** A figure's median over the rounds and its spread; `rounds`: each round's figure, in order. */
export interface Median {
  median: number;
  spread: number;
  rounds?: number[];
}

export const summary = (rounds: number[]): Median => ({
  median: median(rounds),
  spread: spread(rounds),
  rounds,
});

/**
 * `a` ÷ `b` round by round (measured back to back, a busy moment weighs on both sides), as the
 * median ratio and its spread; the medians' ratio, spread unknown, if the rounds do not pair up.
 */
export function pairedRatio(a: Median, b: Median): Median {
  const [x, y] = [a.rounds ?? [], b.rounds ?? []];
  if (x.length < 2 || x.length !== y.length) return { median: a.median / b.median, spread: Number.NaN };
  return summary(x.map((value, i) => value / (y[i] as number)));
}

/** A spread as a percentage ("n/a" with fewer than two rounds). */
export const percent = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : 'n/a');

/** Deterministic pseudo-random numbers, so every run measures the same data. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** One GET with an API key, read to its end: its latency, ms (throws unless it answers 200). */
export async function timedGet(url: string, key: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
  return performance.now() - t0;
}
