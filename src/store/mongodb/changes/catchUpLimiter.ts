/**
 * At most `max` catch-up change streams open at once in this process (`mongodb.maxCatchUpStreams`):
 * each is a cursor on the cluster and a pooled connection while it waits for a batch, so
 * hundreds of clients resuming from old tokens at once must not take the whole pool from the
 * API. The others wait in order, at most `waitMs` each (`mongodb.catchUpWaitMs`), and at most
 * `maxWaiting` of them; past either bound the resume is refused (the subscription ends
 * `unavailable`, and the client retries later from the same id).
 */

export type SlotDecision = 'open' | 'wait' | 'refuse';

/** Whether one more catch-up stream opens now, waits for a slot, or is refused. */
export function catchUpDecision(
  active: number,
  waiting: number,
  max: number,
  maxWaiting: number,
): SlotDecision {
  if (active < max && waiting === 0) return 'open';
  return waiting < maxWaiting ? 'wait' : 'refuse';
}

/** Gives back a slot (idempotent). */
export type Release = () => void;

export class CatchUpLimiter {
  #active = 0;
  readonly #queue: Array<(release: Release | null) => void> = [];

  constructor(
    private readonly max: number,
    private readonly waitMs: number,
    private readonly maxWaiting: number = max * 10,
  ) {}

  get active(): number {
    return this.#active;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /** A slot, or null when none came free within the bounds. */
  acquire(): Promise<Release | null> {
    const decision = catchUpDecision(this.#active, this.#queue.length, this.max, this.maxWaiting);
    if (decision === 'open') return Promise.resolve(this.#take());
    if (decision === 'refuse') return Promise.resolve(null);
    return new Promise<Release | null>((resolve) => {
      const grant = (release: Release | null) => {
        clearTimeout(timer);
        resolve(release);
      };
      const timer = setTimeout(() => {
        const at = this.#queue.indexOf(grant);
        if (at >= 0) this.#queue.splice(at, 1);
        resolve(null);
      }, this.waitMs);
      timer.unref();
      this.#queue.push(grant);
    });
  }

  #take(): Release {
    this.#active += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active -= 1;
      const next = this.#queue.shift();
      if (next) next(this.#take());
    };
  }
}
