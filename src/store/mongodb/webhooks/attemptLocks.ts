/**
 * Delivery attempt locks in the system database (`attemptLocks`): one document per lock held,
 * expiry by the server's clock (`$$NOW`, the same for every instance, see webhookUpdates.ts);
 * a released lock is deleted, an expired one is taken over or removed by the TTL index.
 */
import type { Collection, Db } from 'mongodb';
import type { AttemptLockRepository } from '../../port.js';
import { takeByUpsert } from '../database/takeByUpsert.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';
import { attemptLockTakeFilter, attemptLockTakeUpdate } from './webhookUpdates.js';

interface AttemptLockDoc {
  _id: string;
  holder: string;
  expiresAt: Date;
}

export class MongoAttemptLocks implements AttemptLockRepository {
  readonly #locks: Collection<AttemptLockDoc>;

  constructor(db: Db) {
    this.#locks = db.collection<AttemptLockDoc>(SYSTEM_COLLECTIONS.attemptLocks);
  }

  acquire(deliveryId: string, holder: string, ttlMs: number): Promise<boolean> {
    return takeByUpsert(
      this.#locks,
      attemptLockTakeFilter(deliveryId, holder),
      attemptLockTakeUpdate(holder, ttlMs),
    );
  }

  async release(deliveryId: string, holder: string): Promise<void> {
    await this.#locks.deleteOne({ _id: deliveryId, holder });
  }
}
