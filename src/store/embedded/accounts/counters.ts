/**
 * Fixed-window hit counters in process memory. The embedded store serves one process, so its
 * rate limits are per process by design; nothing here needs to survive a restart.
 */
import type { CounterRepository } from '../../port.js';

interface Window {
  count: number;
  resetAtMs: number;
}

/** How many hits pass between sweeps of expired windows (keeps memory bounded by live keys). */
const SWEEP_EVERY = 1000;

export class EmbeddedCounters implements CounterRepository {
  readonly #windows = new Map<string, Window>();
  #hitsSinceSweep = 0;

  async hit(key: string, windowMs: number, nowMs: number): Promise<{ count: number; resetAtMs: number }> {
    if (++this.#hitsSinceSweep >= SWEEP_EVERY) this.sweep(nowMs);
    let window = this.#windows.get(key);
    if (!window || nowMs >= window.resetAtMs) {
      // The window opens at the first hit after the previous one ended.
      window = { count: 0, resetAtMs: nowMs + windowMs };
      this.#windows.set(key, window);
    }
    window.count += 1;
    return { count: window.count, resetAtMs: window.resetAtMs };
  }

  /** Forget windows that have ended by `nowMs`. */
  sweep(nowMs: number): void {
    this.#hitsSinceSweep = 0;
    for (const [key, window] of this.#windows) {
      if (nowMs >= window.resetAtMs) this.#windows.delete(key);
    }
  }

  /** Keys with a window in memory. */
  get size(): number {
    return this.#windows.size;
  }
}
