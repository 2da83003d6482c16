/**
 * The rule of a delivery's attempt lock, as a pure function: who may take it at a given time.
 * The embedded store applies it in memory; the MongoDB store applies the same rule in its
 * filter (src/store/mongodb/webhooks/webhookUpdates.ts, with the server's clock); the webhook services
 * size the lock with attemptLockTtlMs. It lives beside the port so no store imports upwards.
 */

export interface AttemptLockState {
  holder: string;
  expiresAtMs: number;
}

/** `holder` may take (or renew) the lock: free, its own, or expired at `nowMs`. */
export function mayTakeAttemptLock(
  lock: AttemptLockState | undefined,
  holder: string,
  nowMs: number,
): boolean {
  return lock === undefined || lock.holder === holder || lock.expiresAtMs <= nowMs;
}

/**
 * How long an attempt lock lasts without renewal: well above the attempt's own time limit (it
 * is renewed every third of it while the attempt runs, so only a holder that died or stalled
 * for that long loses it).
 */
export function attemptLockTtlMs(attemptTimeoutMs: number): number {
  return Math.max(3 * attemptTimeoutMs, 30_000);
}
