/**
 * Delivery attempt locks in the system database (`attemptLocks`): one document per lock held,
 * expiry by the server's clock (`$$NOW`, the same for every instance, see webhookUpdates.ts);
 * a released lock is deleted, an expired one is taken over or removed by the TTL index.
 */
import type { Collection, Db } from 'mongodb';
import type { AttemptLockRepository } from '../../port.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
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

  async acquire(deliveryId: string, holder: string, ttlMs: number): Promise<boolean> {
    try {
      const result = await this.#locks.updateOne(
        attemptLockTakeFilter(deliveryId, holder),
        attemptLockTakeUpdate(holder, ttlMs),
        { upsert: true },
      );
      return result.matchedCount + result.upsertedCount === 1;
    } catch (error) {
      // Another holder's lock is live: the filter missed it and the upsert's insert collides.
      if (isDuplicateKeyError(error)) return false;
      throw error;
    }
  }

  async release(deliveryId: string, holder: string): Promise<void> {
    await this.#locks.deleteOne({ _id: deliveryId, holder });
  }
}
