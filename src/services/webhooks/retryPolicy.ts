/**
 * When a failed attempt is retried: `base * 2^(retry - 1)`, spread by ±20 % jitter so that
 * deliveries failing together do not retry together. The plan sets how many retries there are.
 */

/** Fraction of the delay by which jitter moves it either way. */
export const JITTER = 0.2;

/** Delay before retry number `retry` (1 = the first retry); `random` in [0, 1). */
export function retryDelayMs(retry: number, baseMs: number, random: () => number = Math.random): number {
  const nominal = baseMs * 2 ** (retry - 1);
  return Math.round(nominal * (1 + JITTER * (2 * random() - 1)));
}

/** Whether the attempt numbered `attempt` (1 = first try) may be followed by another. */
export function hasRetryLeft(attempt: number, retries: number): boolean {
  return attempt <= retries;
}
