/**
 * Stream slots shared by every Folio instance: one document per holder (API key) listing its
 * leases, `{_id, slots: [{id, expiresAt}], expiresAt}`. Taking a slot is one conditional upsert
 * whose filter counts the live leases and whose update (an aggregation pipeline) drops expired
 * ones and appends the new one, so the cap holds across instances. Expiry uses the server's
 * clock (`$$NOW`), never an instance's; the TTL index removes a holder's document once its last
 * lease has expired.
 */
import type { Collection, Db, Document, Filter } from 'mongodb';
import type { StreamSlotRepository } from '../../port.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';

export interface SlotLease {
  id: string;
  expiresAt: Date;
}

export interface StreamSlotsDoc {
  _id: string;
  slots: SlotLease[];
  /** The last lease's expiry, for the TTL index. */
  expiresAt: Date;
}

/** The leases still live, by the server's clock. */
const LIVE_SLOTS = {
  $filter: { input: { $ifNull: ['$slots', []] }, cond: { $gt: ['$$this.expiresAt', '$$NOW'] } },
};

/**
 * The filter matches the holder's document only while it has fewer than `max` live leases
 * (`slotId` excluded, so taking a slot twice is harmless); with `upsert`, a missing document is
 * created, and a full one makes the upsert collide with the existing `_id` (E11000): "full".
 */
export function acquireSlotFilter(holder: string, slotId: string, max: number): Filter<StreamSlotsDoc> {
  const others = { $filter: { input: LIVE_SLOTS, cond: { $ne: ['$$this.id', slotId] } } };
  return { _id: holder, $expr: { $lt: [{ $size: others }, max] } };
}

/** Keep the live leases other than `slotId`, add `slotId` for `ttlMs`, and track the last expiry. */
export function acquireSlotUpdate(slotId: string, ttlMs: number): Document[] {
  const lease = { id: slotId, expiresAt: { $add: ['$$NOW', ttlMs] } };
  return [
    {
      $set: {
        slots: {
          $concatArrays: [{ $filter: { input: LIVE_SLOTS, cond: { $ne: ['$$this.id', slotId] } } }, [lease]],
        },
      },
    },
    { $set: { expiresAt: { $max: '$slots.expiresAt' } } },
  ];
}

/** Matches the holder's document while `slotId` is one of its live leases. */
export function renewSlotFilter(holder: string, slotId: string): Filter<StreamSlotsDoc> {
  return { _id: holder, $expr: { $in: [slotId, { $map: { input: LIVE_SLOTS, in: '$$this.id' } }] } };
}

/** Push one live lease's expiry to `ttlMs` from now (expired leases go). */
export function renewSlotUpdate(slotId: string, ttlMs: number): Document[] {
  return [
    {
      $set: {
        slots: {
          $map: {
            input: LIVE_SLOTS,
            in: {
              $cond: [
                { $eq: ['$$this.id', slotId] },
                { id: '$$this.id', expiresAt: { $add: ['$$NOW', ttlMs] } },
                '$$this',
              ],
            },
          },
        },
      },
    },
    { $set: { expiresAt: { $max: '$slots.expiresAt' } } },
  ];
}

/** Two first streams of a new holder race to insert its document; the loser tries again. */
const MAX_UPSERT_ATTEMPTS = 2;

export class MongoStreamSlots implements StreamSlotRepository {
  readonly #slots: Collection<StreamSlotsDoc>;

  constructor(db: Db) {
    this.#slots = db.collection<StreamSlotsDoc>(SYSTEM_COLLECTIONS.streamSlots);
  }

  async acquire(holder: string, slotId: string, max: number, ttlMs: number): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#slots.updateOne(
          acquireSlotFilter(holder, slotId, max),
          acquireSlotUpdate(slotId, ttlMs),
          {
            upsert: true,
          },
        );
        return true;
      } catch (error) {
        if (!isDuplicateKeyError(error)) throw error;
        // The document exists and the filter refused it: full. Once more in case it was a race
        // between two first inserts, which the second attempt decides on the real count.
        if (attempt >= MAX_UPSERT_ATTEMPTS) return false;
      }
    }
  }

  async renew(holder: string, slotId: string, ttlMs: number): Promise<boolean> {
    const result = await this.#slots.updateOne(
      renewSlotFilter(holder, slotId),
      renewSlotUpdate(slotId, ttlMs),
    );
    return result.matchedCount === 1;
  }

  async release(holder: string, slotId: string): Promise<void> {
    await this.#slots.updateOne({ _id: holder }, { $pull: { slots: { id: slotId } } });
  }
}
