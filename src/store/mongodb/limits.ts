/**
 * The MongoDB store's time limits (configuration `mongodb.*`, documented in docs/mongodb.md):
 * no request waits on the database without a bound.
 */
import type { WriteLimits } from './transactions.js';

export interface MongoLimits extends WriteLimits {
  /** `maxTimeMS` of list queries and counts: past it the client gets 503 `query_timeout`. */
  queryTimeoutMs: number;
  /**
   * How long a collection checked as ready (pre- and post-images on) is trusted before the next
   * write checks it again; a collection dropped behind Folio's back is repaired within this.
   */
  collectionRecheckMs: number;
}

export const DEFAULT_MONGO_LIMITS: MongoLimits = {
  queryTimeoutMs: 10_000,
  commitTimeoutMs: 10_000,
  writeConcernTimeoutMs: 10_000,
  collectionRecheckMs: 30_000,
};
