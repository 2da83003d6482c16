/**
 * Erases trash entries past their retention, store-wide, every SWEEP_EVERY_MS (readers stop
 * seeing an entry at its `expiresAt` already: this frees the space). A sweep erases in rounds
 * of SWEEP_BATCH so no single transaction holds the store for long, and yields to the event
 * loop between rounds (an awaited store call that ran synchronously would not: only a timer or
 * I/O turn lets requests and writes in). `stop` ends a sweep between rounds.
 */
import type { Logger } from 'pino';
import { isoNow } from '../../ids.js';
import type { Store } from '../../store/port.js';

export const SWEEP_EVERY_MS = 60_000;
export const SWEEP_BATCH = 500;

export class TrashSweeper {
  #timer: NodeJS.Timeout | null = null;
  #running: Promise<number> | null = null;
  #stopped = false;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {}

  start(everyMs = SWEEP_EVERY_MS): void {
    this.#stopped = false;
    this.#timer ??= setInterval(() => {
      this.sweep().catch((err: unknown) => this.logger.warn({ err }, 'trash sweep failed'));
    }, everyMs);
    this.#timer.unref();
  }

  /** One sweep: every entry expired now is erased; how many. */
  sweep(): Promise<number> {
    this.#running ??= this.#sweep().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #sweep(): Promise<number> {
    const now = isoNow(this.nowMs());
    let total = 0;
    for (;;) {
      if (this.#stopped) return total;
      const erased = await this.store.trash.purgeExpired(now, SWEEP_BATCH);
      total += erased;
      if (erased < SWEEP_BATCH) return total;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.#running?.catch(() => undefined);
  }
}
