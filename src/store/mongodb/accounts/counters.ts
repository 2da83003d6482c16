/**
 * Rate-limit counters shared by every Folio instance: one document per key, counted with a
 * single atomic `findOneAndUpdate` whose update is an aggregation pipeline, so the "new window
 * or one more hit" decision happens on the server, inside the document write.
 *
 * Windows are decided by the server's clock (`$$NOW`, the same clock the TTL index uses), never
 * an instance's: instances whose clocks disagree still share one window per key. What a hit
 * costs: one round trip to the primary, acknowledged with `w: 1` (no wait for replication). A
 * failover can lose the last few counts, letting a key through a few requests early in that
 * second; a majority write on every request would cost a replication round trip instead.
 */
import type { Collection, Db, Document, WriteConcernSettings } from 'mongodb';
import type { CounterRepository } from '../../port.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';

export interface CounterDoc {
  _id: string;
  count: number;
  /** When the current window ends, by the server's clock. */
  resetAt: Date;
  /** The server's time of the last hit: `resetAt - hitAt` is what is left of the window. */
  hitAt: Date;
  /** For the TTL index: the server's time of the last hit plus the window plus a grace period. */
  expiresAt: Date;
}

/**
 * Counter documents outlive their last hit by the window plus this, by the server's clock, so
 * the TTL monitor never removes a window still in use.
 */
export const COUNTER_TTL_GRACE_MS = 60_000;

/** Counts are acknowledged by the primary alone (see the cost note above). */
export const COUNTER_WRITE_CONCERN: WriteConcernSettings = { w: 1 };

/**
 * The update: if there is no window yet or the server's now has reached its end, open a new one
 * (count 1, ends at now + windowMs); otherwise count one more. In a single `$set` stage every
 * expression reads the document as it was before the stage, so both fields decide on the old
 * `resetAt`. An upsert runs it on `{_id}` alone: a `resetAt` that is not a date (missing, or the
 * number an older Folio stored) opens a new window.
 * `now` is `$$NOW` on the server; tests substitute a fixed date for it.
 */
export function counterUpdatePipeline(windowMs: number, now: unknown = '$$NOW'): Document[] {
  const opensWindow = { $or: [{ $ne: [{ $type: '$resetAt' }, 'date'] }, { $gte: [now, '$resetAt'] }] };
  return [
    {
      $set: {
        // `$cond: [if, then, else]` (the array form keeps `then` keys out of our objects).
        count: { $cond: [opensWindow, 1, { $add: [{ $ifNull: ['$count', 0] }, 1] }] },
        resetAt: { $cond: [opensWindow, { $add: [now, windowMs] }, '$resetAt'] },
        hitAt: now,
        expiresAt: { $add: [now, windowMs + COUNTER_TTL_GRACE_MS] },
      },
    },
  ];
}

/** The window's end in the caller's clock: the caller's now plus what the server says is left. */
export function resetInCallerClock(doc: Pick<CounterDoc, 'resetAt' | 'hitAt'>, callerNowMs: number): number {
  return callerNowMs + (doc.resetAt.getTime() - doc.hitAt.getTime());
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
        const doc = await this.#counters.findOneAndUpdate({ _id: key }, counterUpdatePipeline(windowMs), {
          upsert: true,
          returnDocument: 'after',
          writeConcern: COUNTER_WRITE_CONCERN,
        });
        if (!doc) throw new Error(`counter ${key}: upsert returned no document`);
        return { count: doc.count, resetAtMs: resetInCallerClock(doc, nowMs) };
      } catch (error) {
        // The server retries such upserts itself since 4.2; this covers the cases it does not.
        if (!isDuplicateKeyError(error) || attempt >= MAX_UPSERT_ATTEMPTS) throw error;
      }
    }
  }
}
