/**
 * Delivery attempt locks on the embedded store: in memory. One process serves a data directory
 * (dataDirLock.ts), and a lock outliving its process would only delay a retry, so nothing is
 * written (no sync per attempt). Expired locks are dropped as they are met and on a sweep when
 * the map grows.
 */
import { type AttemptLockState, mayTakeAttemptLock } from '../../attemptLock.js';
import type { AttemptLockRepository } from '../../port.js';

/** Past this many locks, expired ones are swept on the next take. */
const SWEEP_OVER = 10_000;

export class EmbeddedAttemptLocks implements AttemptLockRepository {
  readonly #locks = new Map<string, AttemptLockState>();

  async acquire(deliveryId: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    if (this.#locks.size > SWEEP_OVER) this.#sweep(now);
    if (!mayTakeAttemptLock(this.#locks.get(deliveryId), holder, now)) return false;
    this.#locks.set(deliveryId, { holder, expiresAtMs: now + ttlMs });
    return true;
  }

  async release(deliveryId: string, holder: string): Promise<void> {
    if (this.#locks.get(deliveryId)?.holder === holder) this.#locks.delete(deliveryId);
  }

  #sweep(now: number): void {
    for (const [id, lock] of this.#locks) if (lock.expiresAtMs <= now) this.#locks.delete(id);
  }
}
