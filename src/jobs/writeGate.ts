/**
 * Writes go first: a delivery retry waits for a quiet moment in the document writes before it
 * starts. On the embedded store a retry's bookkeeping (Agenda's claim and run state, the attempt
 * record, the kept body) shares the event loop and SQLite's one writer with the API's writes,
 * and a backlog of thousands of due retries (a receiver that was down) made a 10,000-document
 * import elsewhere take 1.7 × its time. A retry is already seconds late by design (backoff), so
 * a little more delay costs nothing; an import or bulk write waiting behind retries costs the
 * client. The wait is bounded (`maxWaitMs`), so under writes that never stop retries still go,
 * at least `concurrency` of them every `maxWaitMs`.
 *
 * The signal is a counter that grows with each committed group of document writes (the
 * embedded store's group commit); it is read only while a retry is about to start, so an idle
 * server pays nothing.
 */

export interface WriteGateRule {
  /** No document write group committed for this long: a retry may start. */
  quietMs: number;
  /** A retry waits at most this long for a quiet moment, then starts anyway. */
  maxWaitMs: number;
}

/** The rule the server uses: an import's batches commit every few ms, well under `quietMs`. */
export const RETRY_WRITE_GATE: WriteGateRule = { quietMs: 250, maxWaitMs: 2_000 };

/**
 * How much longer a retry waits before it starts: 0 once writes have been quiet for `quietMs`
 * or once it has waited `maxWaitMs`; otherwise until the first of the two can next be true.
 * `quietForMs`: time since a write group was last seen to commit; `waitedMs`: this retry's wait.
 */
export function retryWaitMs(quietForMs: number, waitedMs: number, rule: WriteGateRule): number {
  if (quietForMs >= rule.quietMs || waitedMs >= rule.maxWaitMs) return 0;
  return Math.min(rule.quietMs - quietForMs, rule.maxWaitMs - waitedMs);
}

export class WriteGate {
  /** The counter's value at the last look, and when a look first saw it. */
  #seen: number;
  #changedAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** Grows with each committed group of document writes. */
    private readonly activity: () => number,
    private readonly rule: WriteGateRule = RETRY_WRITE_GATE,
    private readonly now: () => number = Date.now,
  ) {
    this.#seen = activity();
  }

  /**
   * Time since writes were last seen. The counter is read only when asked, so a change found now
   * may be older: it counts as now (a retry waits one `quietMs` more, never less).
   */
  quietForMs(): number {
    const now = this.now();
    const count = this.activity();
    if (count !== this.#seen) {
      this.#seen = count;
      this.#changedAt = now;
    }
    return now - this.#changedAt;
  }

  /** Resolves once a retry may start (see retryWaitMs), or at once when `signal` aborts. */
  async waitForQuiet(signal: AbortSignal): Promise<void> {
    const started = this.now();
    for (;;) {
      if (signal.aborted) return;
      const wait = retryWaitMs(this.quietForMs(), this.now() - started, this.rule);
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
