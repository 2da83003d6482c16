/**
 * The MongoDB store's time limits (configuration `mongodb.*`, documented in docs/mongodb.md):
 * no request waits on the database without a bound.
 */
import type { WriteLimits } from './transactions.js';

/** The change feed's bounds (configuration `mongodb.*`, docs/mongodb.md). */
export interface FeedLimits {
  /** Bytes of recent events kept in memory to serve resumes (0: none, every resume streams). */
  changeRingBytes: number;
  /** Catch-up streams open at once in this process. */
  maxCatchUpStreams: number;
  /** How long a resume waits for a catch-up slot before it is refused (`unavailable`). */
  catchUpWaitMs: number;
  /** How long a subscription may take to be ready before it ends `unavailable`. */
  streamReadyTimeoutMs: number;
}

export const DEFAULT_FEED_LIMITS: FeedLimits = {
  changeRingBytes: 64 * 1024 * 1024,
  maxCatchUpStreams: 8,
  catchUpWaitMs: 5_000,
  streamReadyTimeoutMs: 15_000,
};

export interface MongoLimits extends WriteLimits, FeedLimits {
  /** `maxTimeMS` of list queries and counts: past it the client gets 503 `query_timeout`. */
  queryTimeoutMs: number;
  /**
   * How long a collection checked as ready (pre- and post-images on) is trusted before the next
   * write checks it again; a collection dropped behind Folio's back is repaired within this.
   */
  collectionRecheckMs: number;
  /**
   * How long an operation waits for a pooled connection (the driver's `waitQueueTimeoutMS`,
   * unbounded by default): past it the client gets 503 `store_unavailable`, never an
   * unbounded queue behind a full pool.
   */
  poolWaitTimeoutMs: number;
}

export const DEFAULT_MONGO_LIMITS: MongoLimits = {
  queryTimeoutMs: 10_000,
  commitTimeoutMs: 10_000,
  writeConcernTimeoutMs: 10_000,
  collectionRecheckMs: 30_000,
  poolWaitTimeoutMs: 10_000,
  ...DEFAULT_FEED_LIMITS,
};
