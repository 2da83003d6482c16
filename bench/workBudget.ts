/**
 * What a throughput ratio against bare Koa means in microseconds, measured in the same run.
 * bench/peers.ts also runs bare Koa made to burn a fixed amount of CPU per request (BARE_WORK_US)
 * at a few levels. On a machine the load generator shares, each µs a server adds costs more than
 * a µs of throughput (a slower server wakes the generator for every response and answers in
 * smaller batches), and by how much changes with the load, so the levels are the measure:
 * `1 / ratio − 1` (0 for bare Koa itself) rises with the added work, and a ratio between two
 * levels stands for the work between them, read off the straight line joining them. That gives
 * the budget a target leaves (how much more than bare Koa a server may do per request and
 * still meet it) and what a measured server adds, in the same units.
 */

export interface WorkLevel {
  /** CPU burned per request on top of bare Koa, µs. */
  workMicros: number;
  /** That server's throughput ÷ bare Koa's, same run. */
  ratio: number;
}

export interface WorkEstimate {
  /** µs per request; NaN when the levels cannot say. */
  micros: number;
  /** Read beyond the highest level, along the line through the last two: a rough figure. */
  extrapolated: boolean;
}

/** The slowdown the model is linear in: 0 for bare Koa, growing with the added work. */
const slowdown = (ratio: number) => 1 / ratio - 1;

/**
 * The added work, µs per request, that `ratio` against bare Koa stands for among `levels`.
 * Bare Koa itself (no work, ratio 1) is the first point; levels with no work or a ratio that is
 * not a positive finite number are left out. A ratio of 1 or more is no added work.
 */
export function equivalentWork(ratio: number, levels: readonly WorkLevel[]): WorkEstimate {
  const none = { micros: Number.NaN, extrapolated: false };
  if (!(ratio > 0) || !Number.isFinite(ratio)) return none;
  if (ratio >= 1) return { micros: 0, extrapolated: false };
  const points = [
    { x: 0, y: 0 },
    ...levels
      .filter((l) => l.workMicros > 0 && l.ratio > 0 && Number.isFinite(l.ratio))
      .map((l) => ({ x: l.workMicros, y: slowdown(l.ratio) }))
      .sort((a, b) => a.x - b.x),
  ];
  const y = slowdown(ratio);
  for (let i = 1; i < points.length; i++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    // A segment a noisy level made flat or falling says nothing; the next one may.
    if (b.y > a.y && y >= a.y && y <= b.y)
      return { micros: a.x + ((y - a.y) * (b.x - a.x)) / (b.y - a.y), extrapolated: false };
  }
  const last = points.at(-1)!;
  const before = points.at(-2);
  if (!before || last.y <= before.y || y < last.y) return none;
  return { micros: last.x + ((y - last.y) * (last.x - before.x)) / (last.y - before.y), extrapolated: true };
}
