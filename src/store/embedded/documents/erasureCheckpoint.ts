/**
 * Erasure that reaches the disk on a quiet database. An erase commits zeroed pages
 * (`secure_delete`), but the WAL still holds the frames written before it, the erased text among
 * them, until later writes reuse them: on a database nobody writes to, for good. So once an erase
 * has committed, a truncating checkpoint copies every frame into the database file and empties
 * the WAL. Erases within `ERASURE_CHECKPOINT_DELAY_MS` of each other share one checkpoint.
 */

/** How long after an erase its checkpoint starts (a sweep or a burst of purges shares one). */
export const ERASURE_CHECKPOINT_DELAY_MS = 1000;

/**
 * How soon after an erase its bytes are in no file (docs/collections.md): the delay, then the
 * checkpoint, retried every 200 ms while a reader of an older snapshot holds the WAL.
 */
export const ERASURE_CHECKPOINT_BOUND_MS = 3000;

export class ErasureCheckpoint {
  #timer: NodeJS.Timeout | null = null;

  /** `truncate` runs `PRAGMA wal_checkpoint(TRUNCATE)`, or has it run. */
  constructor(
    private readonly truncate: () => void,
    private readonly delayMs = ERASURE_CHECKPOINT_DELAY_MS,
  ) {}

  /**
   * Called inside the erasing transaction; the timer fires after it has committed (transactions
   * are synchronous). One that rolls back costs one checkpoint for nothing.
   */
  schedule(): void {
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.truncate();
    }, this.delayMs);
    // Closing the store checkpoints and removes the WAL anyway.
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }
}
