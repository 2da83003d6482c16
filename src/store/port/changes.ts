/** The change feed: committed changes in commit order, per collection or store-wide. */
import type { DataScope, FolioDocument } from './documents.js';

export type ChangeType = 'created' | 'updated' | 'deleted';

/**
 * One committed document change. Tokens are store-wide and resumable on any instance sharing
 * the store: pass one as `after` to continue just after that event.
 */
export interface ChangeEvent {
  /** Opaque, store-wide, strictly increasing in commit order. */
  token: string;
  /** The project environment the write belongs to. */
  scope: DataScope;
  type: ChangeType;
  collection: string;
  documentId: string;
  /** The document at that version; for `deleted`, the document as it was just before. */
  document: FolioDocument;
  /** ISO 8601 commit time. */
  timestamp: string;
}

/** Why a subscription ended without its owner closing it. */
export type ChangeFeedEnd =
  /** `after` is older than the retained history (expired): events after it are gone. */
  | 'history_lost'
  /** `after` is malformed or was never issued by this store. */
  | 'invalid_token'
  /** The collection (or its database) was dropped or renamed under the feed. */
  | 'invalidated'
  /** The subscriber fell more than `bufferLimit` events behind. */
  | 'overflow'
  /** The store is shutting down. */
  | 'store_closed'
  /**
   * The store's change source failed in a way reopening cannot clear (MongoDB: privileges
   * revoked, a stream the server refuses), or did not start in time: resume later from the last
   * token taken, here or on another instance.
   */
  | 'unavailable';

export interface WatchOptions {
  /** Resume just after this token (from a ChangeEvent); omitted = from now. */
  after?: string | undefined;
  /** Most undelivered events this subscription may hold before it ends with 'overflow' (default 10,000). */
  bufferLimit?: number | undefined;
}

/** Default `WatchOptions.bufferLimit`. */
export const DEFAULT_BUFFER_LIMIT = 10_000;

export interface ChangeSubscription extends AsyncIterable<ChangeEvent> {
  /** Stop receiving; the iterator finishes at once (events not yet taken are dropped). Idempotent. */
  close(): void;
  /**
   * Set once the feed ended for a reason other than `close()`. The iterator then finishes at
   * once, dropping events not yet taken: resume after the last token taken.
   */
  readonly endedBy: ChangeFeedEnd | null;
  /**
   * Resolves once the subscription is established: its source is reading (events committed from
   * then on are delivered) and, with `after`, its resume point was accepted; or once it ended
   * (check `endedBy`). Never rejects. Lets a caller answer "cannot resume" before it commits to
   * a response.
   */
  readonly ready: Promise<void>;
  /**
   * The same queue without promises, for a consumer serving many subscriptions (the SSE
   * streams): `take()` returns the next queued event, or undefined when none is queued now;
   * `onQueued` is called synchronously (from the store's fan-out, so it must not throw) when an
   * event is queued and when the subscription ends. Use this or the iterator, not both.
   */
  take(): ChangeEvent | undefined;
  onQueued(listener: (() => void) | null): void;
  /** Whether it still reads history (a resume's catch-up); false once live. */
  readonly catchingUp: boolean;
  /**
   * Pace a catch-up by its consumer's client: while held, no further page of history is read
   * (the history stays in the store, not in memory). No effect once live.
   */
  holdHistory(hold: boolean): void;
  /**
   * Optional (MongoDB): a token to resume from although no event came, or null. While the
   * subscription is live and has handed out everything, the store's shared source moves on
   * over other collections' writes; resuming from this token loses nothing, so a client on a
   * quiet collection can move its last event id (an SSE checkpoint) before its old one leaves
   * the store's history.
   */
  checkpoint?(): string | null;
  /**
   * For a subscription from now: a token to resume from that loses none of its events (the live
   * source's position when it joined), once known; null while unknown.
   */
  readonly startPosition?: string | null;
}

/**
 * The store-wide change feed. Each store keeps ONE change source per process over everything
 * Folio writes (never one per collection or per subscriber) and fans it out in process to
 * subscriptions keyed by scope and collection, plus `watchAll`.
 *
 * Guarantees, for every subscription:
 * - events come in commit order, each once; a subscription sees only its own scope/collection;
 * - without `after` it delivers every change committed after `watch()` returned (at the latest,
 *   after `ready` resolved);
 * - with `after` it first catches up from history (its own catch-up read, closed as soon as it
 *   has caught up, not at the next write) and then joins the live fan-out with no gap and no
 *   duplicate. History is kept at least `events.retentionMs`; older tokens end it with
 *   `history_lost`, malformed or foreign ones with `invalid_token`;
 * - a slow subscriber never delays the others: more than `bufferLimit` undelivered events end it
 *   with `overflow` (resume after the last token taken);
 * - transient source failures (MongoDB network errors, elections) are invisible: the source
 *   reopens from its last position with backoff. Only a resume point that is really gone or
 *   malformed, a dropped collection, an overflow or the store closing end a subscription.
 */
export interface ChangeFeed {
  /** Committed changes of one collection of one scope, in commit order. */
  watch(scope: DataScope, collection: string, options?: WatchOptions): ChangeSubscription;
  /** Committed changes of every scope and collection, in commit order (the webhook dispatcher). */
  watchAll(options?: WatchOptions): ChangeSubscription;
  /** Open database sources in this process: 0 or 1, whatever the number of subscriptions. */
  readonly sourceCount: number;
}
