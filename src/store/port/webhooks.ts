/** Webhooks: registrations, their delivery history, and the change-feed consumer's lease. */
import type { DataScope } from './documents.js';

export type WebhookStatus = 'active' | 'disabled';

/** A webhook of one collection of one scope. */
export interface WebhookRecord {
  id: string;
  scope: DataScope;
  collection: string;
  url: string;
  /** Event type names it receives (`document.created`, ...). */
  events: string[];
  description: string;
  status: WebhookStatus;
  /** The signing secret as the service sealed it; the store keeps it as given. */
  sealedSecret: string;
  /** Failed deliveries in a row since the last success or re-enable. */
  consecutiveFailures: number;
  createdAt: string;
  updatedAt: string;
}

/** Fields an update may set; absent fields keep their value. */
export type WebhookChanges = Partial<
  Pick<WebhookRecord, 'url' | 'events' | 'description' | 'status' | 'sealedSecret' | 'consecutiveFailures'>
> & { updatedAt: string };

export interface WebhookRepository {
  /**
   * Create the webhook unless its collection already holds `maxPerCollection`: false then, and
   * nothing written. Atomic: concurrent creates never take the collection past the maximum.
   * Throws DuplicateError('id') if the id is taken.
   */
  create(webhook: WebhookRecord, maxPerCollection: number): Promise<boolean>;
  /** The webhook, or null when it does not exist in that scope and collection. */
  get(scope: DataScope, collection: string, id: string): Promise<WebhookRecord | null>;
  /** Webhooks of the collection, oldest first. */
  list(scope: DataScope, collection: string): Promise<WebhookRecord[]>;
  count(scope: DataScope, collection: string): Promise<number>;
  /** Active webhooks of the collection that receive `event`, oldest first. */
  listActive(scope: DataScope, collection: string, event: string): Promise<WebhookRecord[]>;
  /** Apply the changes; the updated webhook, or null when it does not exist. */
  update(
    scope: DataScope,
    collection: string,
    id: string,
    changes: WebhookChanges,
  ): Promise<WebhookRecord | null>;
  /** Remove the webhook and its whole delivery history; false when it did not exist. */
  delete(scope: DataScope, collection: string, id: string): Promise<boolean>;
  /** A delivery succeeded: the failure count goes back to 0. */
  recordSuccess(id: string): Promise<void>;
  /**
   * A delivery failed: atomically add one to the failure count and, when the count reaches
   * `disableAt`, set the status to `disabled`. The webhook after the change, or null if gone.
   */
  recordFailure(id: string, disableAt: number, at: string): Promise<WebhookRecord | null>;
  /**
   * The key that seals webhook secrets when the configuration gives none: created with
   * `generate()` on first use, the same for every process on this store from then on.
   */
  sealingKey(generate: () => Buffer): Promise<Buffer>;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

/** One HTTP attempt of a delivery. */
export interface DeliveryAttempt {
  /** 1 for the first attempt, 2 for the first retry, ... */
  number: number;
  at: string;
  /** The receiver's status code, or null when there was no answer. */
  statusCode: number | null;
  /** Why the attempt failed (timeout, connection error, refused target), or null. */
  error: string | null;
  durationMs: number;
  /** When the next attempt is due; null when this one was the last. */
  nextRetryAt: string | null;
}

/** One event sent to one webhook, with every attempt made. */
export interface DeliveryRecord {
  id: string;
  webhookId: string;
  event: string;
  documentId: string | null;
  /** The event's own time (commit time, or the test's). */
  eventTimestamp: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryRepository {
  /**
   * Insert or replace the delivery by id. When it was new, the webhook keeps only its `keep`
   * newest deliveries (by createdAt, then id); older ones still `pending` are kept too.
   */
  save(delivery: DeliveryRecord, keep: number): Promise<void>;
  get(id: string): Promise<DeliveryRecord | null>;
  /** The webhook's newest deliveries first, at most `limit`. */
  list(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
}

/**
 * Attempt locks of webhook deliveries: at most one attempt of a delivery runs at a time,
 * store-wide, and only the holder records it. A lock not renewed within `ttlMs` is free again
 * (its holder died). Expiry is decided by one clock for all processes (the store's); the
 * embedded store (one process per data directory) may keep them in memory.
 */
export interface AttemptLockRepository {
  /** Take the lock for `holder`, or renew it if `holder` has it; false while another holds it. */
  acquire(deliveryId: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Free the lock if `holder` has it. Idempotent. */
  release(deliveryId: string, holder: string): Promise<void>;
}

/**
 * The exact bodies of webhook deliveries handed to the job scheduler for a retry, one per event
 * whatever the number of webhooks, so that retry jobs carry only the key. A body is kept at
 * least until its `keepUntilMs`, which each retry scheduled pushes later (never earlier); after
 * that the store removes it by itself (MongoDB: a TTL index; embedded: `removeExpired`, which
 * also spares a body an unfinished delivery job still names).
 */
export interface DeliveryBodyRepository {
  /** Keep `body` under `key` until at least `keepUntilMs`; a body kept already keeps its bytes. */
  keep(key: string, body: string, keepUntilMs: number): Promise<void>;
  /** The body kept under `key`, or null when there is none (any more). */
  get(key: string): Promise<string | null>;
  /** Remove bodies kept past their time; answers how many went. */
  removeExpired(nowMs: number): Promise<number>;
}

/**
 * A named reader of the change feed (the webhook dispatcher): one lease, so that one process at
 * a time reads for it, and the feed position it has handled, so a restart resumes there.
 * Lease times come from one clock for all processes (the store's), never from each process.
 */
export interface FeedConsumerRepository {
  /** Take the lease for `holder` for `ttlMs` if it is free or expired, or renew it if `holder` has it. True when `holder` holds it. */
  acquire(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Give the lease up if `holder` has it. */
  release(name: string, holder: string): Promise<void>;
  /** The position last saved under `name`, or null. */
  position(name: string): Promise<string | null>;
  /** Save the position, only while `holder` holds an unexpired lease; false otherwise. */
  savePosition(name: string, holder: string, position: string): Promise<boolean>;
}
