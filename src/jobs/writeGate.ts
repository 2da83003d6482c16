/**
 * Heavy writes go first: a delivery retry waits while the document writes are heavy (an import,
 * a bulk, a burst) before it starts. On the embedded store a retry's bookkeeping (Agenda's
 * claim and run state, the attempt record, the kept body) shares the event loop and SQLite's one
 * writer with the API's writes, and a backlog of thousands of due retries (a receiver that was
 * down) made a 10,000-document import elsewhere take 1.7 × its time. A retry is already seconds
 * late by design (backoff), so a little more delay costs nothing; an import waiting behind
 * retries costs the client.
 *
 * Heavy, not any: the rule is a rate (`maxDocuments` per `windowMs`, 1,000 documents a second
 * by default), so the steady trickle of a live application (tens of writes a second) never holds
 * retries back. A first rule, "wait until no write committed for 250 ms", held every retry for its
 * whole `maxWaitMs` under such a trickle, and capped a backlog's drain at `concurrency` retries
 * per `maxWaitMs` (10 a second) for as long as the application kept writing.
 * The wait is bounded (`maxWaitMs`), so under heavy writes that never stop retries still go.
 *
 * The signal is a counter of documents written (the embedded store's group commit); it is read
 * only while a retry is about to start, so an idle server pays nothing.
 */

export interface WriteGateRule {
  /** The window the write rate is measured over. */
  windowMs: number;
  /** Writes are heavy at this many documents per window or more: a retry waits. */
  maxDocuments: number;
  /** A retry waits at most this long for lighter writes, then starts anyway. */
  maxWaitMs: number;
}

/** 1,000 documents a second: an import writes tens of thousands; a live application, far fewer. */
export const RETRY_WRITE_GATE: WriteGateRule = { windowMs: 250, maxDocuments: 250, maxWaitMs: 2_000 };

/**
 * How much longer a retry waits before it looks again: 0 when the writes of the last window are
 * under `maxDocuments`, or once it has waited `maxWaitMs`; otherwise a fifth of a window (never
 * past `maxWaitMs`). `perWindow`: documents written per window lately; `waitedMs`: this retry's
 * wait so far.
 */
export function retryWaitMs(perWindow: number, waitedMs: number, rule: WriteGateRule): number {
  if (perWindow < rule.maxDocuments || waitedMs >= rule.maxWaitMs) return 0;
  return Math.min(Math.max(1, Math.round(rule.windowMs / 5)), rule.maxWaitMs - waitedMs);
}

/**
 * Documents written per window between two looks at the counter: the count since `base`, spread
 * over at least one window (a base older than a window gives the average since then, so a
 * burst after a quiet spell is seen in full only once it has lasted a window).
 */
export function documentsPerWindow(
  base: { at: number; count: number },
  now: { at: number; count: number },
  windowMs: number,
): number {
  const span = Math.max(windowMs, now.at - base.at);
  return ((now.count - base.count) * windowMs) / span;
}

export class WriteGate {
  /**
   * Looks at the counter, at least an eighth of a window apart: the first is the newest one at
   * least a window old (what the rate is measured from), the rest are within the last window,
   * so there are never more than nine.
   */
  readonly #looks: Array<{ at: number; count: number }>;

  constructor(
    /** Grows with each document written. */
    private readonly activity: () => number,
    private readonly rule: WriteGateRule = RETRY_WRITE_GATE,
    private readonly now: () => number = Date.now,
  ) {
    // Made with nothing seen: as if the counter had stood still for a window before.
    this.#looks = [{ at: now() - rule.windowMs, count: activity() }];
  }

  /** Documents written per window lately (see documentsPerWindow); reads the counter once. */
  perWindow(): number {
    const look = { at: this.now(), count: this.activity() };
    const looks = this.#looks;
    const last = looks[looks.length - 1] as { at: number; count: number };
    if (look.at - last.at >= this.rule.windowMs / 8) looks.push(look);
    while (looks.length > 1 && (looks[1] as { at: number }).at <= look.at - this.rule.windowMs) looks.shift();
    return documentsPerWindow(looks[0] as { at: number; count: number }, look, this.rule.windowMs);
  }

  /** Resolves once a retry may start (see retryWaitMs), or at once when `signal` aborts. */
  async waitForLightWrites(signal: AbortSignal): Promise<void> {
    const started = this.now();
    for (;;) {
      if (signal.aborted) return;
      const wait = retryWaitMs(this.perWindow(), this.now() - started, this.rule);
      if (wait <= 0) return;
      await sleep(wait, signal);
    }
  }
}

/** `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
