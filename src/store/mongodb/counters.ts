/**
 * Rate-limit counters shared by every Folio instance: one document per key, counted with a
 * single atomic `findOneAndUpdate` whose update is an aggregation pipeline, so the "new window
 * or one more hit" decision happens on the server, inside the document write.
 */
import type { Collection, Db, Document } from 'mongodb';
import type { CounterRepository } from '../port.js';
import { SYSTEM_COLLECTIONS } from './naming.js';
import { isDuplicateKeyError } from './serverErrors.js';

export interface CounterDoc {
  _id: string;
  count: number;
  /** When the current window ends, epoch ms (the caller's clock, like `nowMs`). */
  resetAt: number;
  /** For the TTL index: the server's time of the last hit plus the window plus a grace period. */
  expiresAt: Date;
}

/**
 * Counter documents outlive their last hit by the window plus this, by the server's clock, so
 * the TTL monitor never removes a window still in use even if clocks disagree by this much.
 */
export const COUNTER_TTL_GRACE_MS = 60_000;

/**
 * The update: if there is no window yet or `nowMs` has reached its end, open a new one
 * (count 1, ends at nowMs + windowMs); otherwise count one more. In a single `$set` stage every
 * expression reads the document as it was before the stage, so both fields decide on the old
 * `resetAt`. An upsert runs it on `{_id}` alone (missing `resetAt` reads as 0: a new window).
 */
export function counterUpdatePipeline(windowMs: number, nowMs: number): Document[] {
  const opensWindow = { $gte: [nowMs, { $ifNull: ['$resetAt', 0] }] };
  return [
    {
      $set: {
        // `$cond: [if, then, else]` (the array form keeps `then` keys out of our objects).
        count: { $cond: [opensWindow, 1, { $add: [{ $ifNull: ['$count', 0] }, 1] }] },
        resetAt: { $cond: [opensWindow, nowMs + windowMs, '$resetAt'] },
        expiresAt: { $add: ['$$NOW', windowMs + COUNTER_TTL_GRACE_MS] },
      },
    },
  ];
}

/** Concurrent first hits on a new key race to insert it; the loser just counts again. */
const MAX_UPSERT_ATTEMPTS = 3;

export class MongoCounters implements CounterRepository {
  readonly #counters: Collection<CounterDoc>;

  constructor(db: Db) {
    this.#counters = db.collection<CounterDoc>(SYSTEM_COLLECTIONS.counters);
  }

  async hit(key: string, windowMs: number, nowMs: number): Promise<{ count: number; resetAtMs: number }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const doc = await this.#counters.findOneAndUpdate(
          { _id: key },
          counterUpdatePipeline(windowMs, nowMs),
          {
            upsert: true,
            returnDocument: 'after',
          },
        );
        if (!doc) throw new Error(`counter ${key}: upsert returned no document`);
        return { count: doc.count, resetAtMs: doc.resetAt };
      } catch (error) {
        // The server retries such upserts itself since 4.2; this covers the cases it does not.
        if (!isDuplicateKeyError(error) || attempt >= MAX_UPSERT_ATTEMPTS) throw error;
      }
    }
  }
}
