/**
 * The port's change feed on MongoDB: ONE change stream per process over every Folio project
 * database (`client.watch()` with a `$match` on the database names, changeEvents.ts), reopened
 * from its last token with backoff on any transient failure (reopeningStream.ts), fanned out to
 * subscriptions keyed by `<database>.<collection>` and to `watchAll`. Tokens are MongoDB resume
 * tokens, valid on every instance of the deployment.
 *
 * - Without a token, a subscription starts "now": see clusterClock.ts for how the stream and
 *   each subscriber agree on that time without a gap (`accepts` drops what committed before).
 * - With a token, the subscription reads what it missed and hands over to the shared stream
 *   (changeFeed/subscription.ts) as soon as that read has scanned past the shared stream's
 *   position. A token the in-memory ring of the shared stream still covers (eventRing.ts) is
 *   served from there, without a stream of its own; an older one reads history on a catch-up
 *   stream, narrowed to its collection (so started at the token's cluster time, resumePoint.ts),
 *   at most `maxCatchUpStreams` at a time (catchUpLimiter.ts), closed as soon as it caught up.
 * - Faults (streamErrors.ts): transient ones reopen; an event over 16 MB is split on the server
 *   (6.0.9+) or stepped over with an error log; an error reopening cannot clear ends every
 *   subscription `unavailable`, marks the feed failed (the instance reports not ready) and
 *   retries with a growing pause, by itself when nothing subscribes (feedRecovery.ts). Every
 *   wait for a subscription to be ready is bounded (`streamReadyTimeoutMs`).
 * - Checkpoints: a live subscription with nothing pending may resume from the shared stream's
 *   position (`checkpoint()`), a post-batch resume token that moves on while its collection is
 *   quiet, so its client's resume point never ages out of the oplog without an event lost.
 *
 * Parts: the shared stream is clusterSource.ts, a resumed subscription's read resumeCursor.ts;
 * this file fans their events out and owns the streams they open.
 */
import type { MongoClient, Timestamp } from 'mongodb';
import { ChangeFanOut } from '../../changeFeed/fanOut.js';
import { FeedEndError, FeedSubscription } from '../../changeFeed/subscription.js';
import {
  type ChangeEvent,
  type ChangeFeed,
  type ChangeFeedEnd,
  type ChangeSubscription,
  type DataScope,
  DEFAULT_BUFFER_LIMIT,
  type WatchOptions,
} from '../../port.js';
import type { StoredDocument } from '../../storedForm.js';
import { DEFAULT_FEED_LIMITS, type FeedLimits } from '../database/limits.js';
import { assertCollectionName, projectDbName, scopeFromDbName } from '../layout/naming.js';
import { CatchUpLimiter } from './catchUpLimiter.js';
import {
  CHANGE_STREAM_OPTIONS,
  type ChangeKind,
  changeStreamPipeline,
  classifyChange,
  compareTokens,
  isWellFormedToken,
  type MappedChange,
  normalizeToken,
  probePipeline,
  type StreamTarget,
  toChangeEvent,
  tokenString,
} from './changeEvents.js';
import { type ClusterClock, isAfterStart } from './clusterClock.js';
import { ClusterSource } from './clusterSource.js';
import { EventRing, eventBytes } from './eventRing.js';
import { FeedRecovery } from './feedRecovery.js';
import {
  type Change,
  ReopeningChangeStream,
  type SkippedEvent,
  type StreamStart,
} from './reopeningStream.js';
import { ResumeCursor, StreamCursor } from './resumeCursor.js';
import { catchUpStart, deliveredBefore } from './resumePoint.js';
import { WarningThrottle } from './warningThrottle.js';

/** A clock value older than this is not used to start a stream (it would replay from there). */
const FRESH_CLOCK_MS = 30_000;

/** At most one warning per this interval for conditions that repeat per event. */
const REPEATED_WARNING_MS = 60_000;

/** Reports what the feed skips or retries (the store has no logger of its own). */
export type FeedWarning = (message: string) => void;

/** What the feed counts, for the metrics. */
export interface FeedStats {
  /** Events stepped over: too large to send on a server that cannot split them. */
  skippedEvents: number;
  /** Events over 16 MB the server split and the feed joined again. */
  joinedEvents: number;
  /** Updates and deletes skipped because their document image was missing. */
  eventsWithoutImage: number;
  /** Times the shared stream stopped on an error reopening cannot clear. */
  sourceFailures: number;
  /** Resumes served from the in-memory ring. */
  ringResumes: number;
  /** Resumes that needed a catch-up stream. */
  catchUpResumes: number;
  /** Resumes refused: no catch-up slot within the wait. */
  catchUpRefused: number;
  /** Subscriptions ended because they were not ready in time. */
  readyTimeouts: number;
}

/**
 * The pause before the shared stream opens again after `failures` consecutive failures that
 * reopening could not clear: 1 s doubling to at most 60 s. Subscriptions meanwhile wait at most
 * `streamReadyTimeoutMs`, so a reader that resubscribes at once cannot spin.
 */
export function restartDelayMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(60_000, 1_000 * 2 ** Math.min(failures - 1, 16));
}

/**
 * The token a subscription's client may resume from although it got no event: the shared
 * stream's published position, once the subscription is live (not catching up) and has handed
 * out everything it was given. Null otherwise (resuming from there could skip a pending event).
 */
export function checkpointToken(state: {
  closed: boolean;
  catchingUp: boolean;
  pending: number;
  published: string | null;
}): string | null {
  if (state.closed || state.catchingUp || state.pending > 0) return null;
  return state.published;
}

function keyOf(db: string, collection: string): string {
  // Database names cannot contain `.`: the first dot splits the key again.
  return `${db}.${collection}`;
}

/** The feed's subscriptions: the shared one plus the checkpoint of the shared stream's position. */
class MongoSubscription extends FeedSubscription {
  constructor(
    settings: ConstructorParameters<typeof FeedSubscription>[0],
    private readonly published: () => string | null,
  ) {
    super(settings);
  }

  checkpoint(): string | null {
    return checkpointToken({
      closed: this.closed,
      catchingUp: this.catchingUp,
      pending: this.pending,
      published: this.published(),
    });
  }
}

export class MongoChangeFeed implements ChangeFeed {
  readonly stats: FeedStats = {
    skippedEvents: 0,
    joinedEvents: 0,
    eventsWithoutImage: 0,
    sourceFailures: 0,
    ringResumes: 0,
    catchUpResumes: 0,
    catchUpRefused: 0,
    readyTimeouts: 0,
  };
  readonly ring: EventRing;
  readonly catchUps: CatchUpLimiter;
  readonly #limits: FeedLimits;
  readonly #fanOut: ChangeFanOut;
  readonly #source: ClusterSource;
  readonly #recovery: FeedRecovery;
  readonly #cursors = new Map<StreamCursor, ReopeningChangeStream>();
  /** Stream closes still in flight; `close()` waits for them before the client closes. */
  readonly #stopping = new Set<Promise<void>>();
  /** Cluster time of each event handed out, for the "from now" filter (no field on the event). */
  readonly #times = new WeakMap<ChangeEvent, Timestamp>();
  /** Scopes of watched databases whose names cannot be read back (hashed project ids). */
  readonly #scopes = new Map<string, DataScope>();
  #closed = false;
  /** Every subscription's `onFinish`: one function, not one closure per subscription. */
  readonly #detach = (sub: FeedSubscription) => this.#fanOut.remove(sub.key, sub);
  readonly #published = () => this.#source.position;
  readonly #unknownDb = new WarningThrottle(REPEATED_WARNING_MS);
  readonly #withoutImage = new WarningThrottle(REPEATED_WARNING_MS);
  /** Split large events on the server (MongoDB 6.0.9+); set by the store's `init()`. */
  #splitLargeEvents = false;
  /** The last failure reopening could not clear, until the shared stream reads again. */
  #failure: { message: string; atMs: number; count: number } | null = null;

  constructor(
    private readonly client: MongoClient,
    readonly dbPrefix: string,
    private readonly clock: ClusterClock,
    private readonly warn: FeedWarning = (message) => process.emitWarning(message, 'FolioChangeFeed'),
    /** Told of every dropped or renamed namespace (`collection` null: a whole database). */
    private readonly onDropped: (db: string, collection: string | null) => void = () => {},
    limits: Partial<FeedLimits> = {},
    private readonly nowMs: () => number = Date.now,
  ) {
    this.#limits = { ...DEFAULT_FEED_LIMITS, ...limits };
    this.ring = new EventRing(this.#limits.changeRingBytes, compareTokens);
    this.catchUps = new CatchUpLimiter(this.#limits.maxCatchUpStreams, this.#limits.catchUpWaitMs);
    this.#source = new ClusterSource(this);
    this.#fanOut = new ChangeFanOut(this.#source);
    this.#recovery = new FeedRecovery(this);
  }

  /** Whether the server splits events over 16 MB (`$changeStreamSplitLargeEvent`). */
  configure(options: { splitLargeEvents: boolean }): void {
    this.#splitLargeEvents = options.splitLargeEvents;
  }

  /** Change streams shared by all subscriptions: 0 or 1. */
  get sourceCount(): number {
    return this.#fanOut.sourceCount;
  }

  /** Catch-up streams open now (each closes as soon as its subscription caught up). */
  get catchUpCount(): number {
    return this.#cursors.size;
  }

  /**
   * Why the shared stream cannot read (an error reopening could not clear), or null when it
   * reads or is idle: while set, the instance reports not ready.
   */
  get failure(): string | null {
    return this.#failure?.message ?? null;
  }

  watch(scope: DataScope, collection: string, options?: WatchOptions): ChangeSubscription {
    assertCollectionName(collection);
    const db = projectDbName(this.dbPrefix, scope);
    if (!scopeFromDbName(this.dbPrefix, db)) this.#scopes.set(db, scope);
    return this.#subscribe(keyOf(db, collection), { kind: 'collection', db, collection }, options);
  }

  watchAll(options?: WatchOptions): ChangeSubscription {
    return this.#subscribe(null, { kind: 'all', prefix: this.dbPrefix }, options);
  }

  /** End every subscription with `store_closed` and close every stream. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#fanOut.endAll('store_closed');
    this.track(this.#recovery.close());
    for (const stream of this.#cursors.values()) this.track(stream.close());
    this.#cursors.clear();
    await Promise.all([...this.#stopping]);
  }

  // --- used by ClusterSource and ResumeCursor --------------------------------------------

  /** Where the shared stream starts: the newest time known to have passed, if fresh. */
  liveStart(): StreamStart {
    // Inclusive: subscribers drop what is not after their own start. A stale or unknown time:
    // start at the server's present instead (a stale one would replay everything since).
    const start = this.clock.fresh(FRESH_CLOCK_MS);
    return start ? { startAtOperationTime: start } : {};
  }

  openStream(start: StreamStart, target: StreamTarget, clientToken: boolean): ReopeningChangeStream {
    return new ReopeningChangeStream({
      open: (from, tuning) =>
        this.client.watch<StoredDocument, Change>(
          changeStreamPipeline(target, { splitLargeEvents: this.#splitLargeEvents }),
          { ...CHANGE_STREAM_OPTIONS, ...from, ...tuning },
        ),
      // No images: the probe only reads which event is too large (reopeningStream.ts).
      openProbe: (from) => this.client.watch<StoredDocument, Change>(probePipeline(target), { ...from }),
      start,
      clientToken,
      onRetry: (error, delayMs) =>
        this.warn(`change stream failed (${(error as Error).message}); reopening in ${delayMs} ms`),
      onSkip: (skipped) => this.#skipped(skipped),
      onJoined: () => {
        this.stats.joinedEvents += 1;
      },
    });
  }

  /**
   * A catch-up stream from `after`, counted in `catchUpCount` until closed; narrowed ones start
   * at the token's cluster time (resumePoint.ts). Throws `invalid_token` for a token with none.
   */
  openCatchUp(after: string, target: StreamTarget, clientToken: boolean): StreamCursor {
    const from = catchUpStart(after, target);
    if (!from) throw new FeedEndError('invalid_token');
    const { skipThrough } = from;
    const stream = this.openStream(from.start, target, clientToken);
    const cursor = new StreamCursor(
      stream,
      (change) =>
        deliveredBefore(tokenString(change._id), skipThrough) ? null : this.#historyEvent(change, target),
      (c) => {
        this.#cursors.delete(c);
        this.track(stream.close());
      },
    );
    this.#cursors.set(cursor, stream);
    return cursor;
  }

  /** One change from the shared stream: publish it, or end what a drop ends. */
  dispatch(change: Change): void {
    const kind = classifyChange(change);
    if (kind.kind === 'dropped') {
      // The next write to a dropped collection re-creates it with its images, at once.
      for (const ns of kind.namespaces) this.onDropped(ns.db, ns.collection);
      this.#fanOut.endKeys((key) => droppedBy(kind, key), 'invalidated');
      const token = tokenString(change._id);
      if (token !== null) this.ring.push({ token, ends: (key) => droppedBy(kind, key), bytes: 256 });
      return;
    }
    if (kind.kind !== 'document') return;
    const mapped = this.#map(change, kind);
    if (!mapped) return;
    // Advance the clock before anyone sees the event, so a later watch() starts after it.
    if (mapped.clusterTime) {
      this.clock.observe(mapped.clusterTime);
      this.#times.set(mapped.event, mapped.clusterTime);
    }
    const key = keyOf(kind.db, kind.collection);
    this.#fanOut.publish(key, mapped.event);
    if (this.#limits.changeRingBytes > 0) {
      this.ring.push({
        token: mapped.event.token,
        key,
        event: mapped.event,
        bytes: eventBytes(mapped.event),
      });
    }
  }

  endAll(reason: ChangeFeedEnd): void {
    this.#fanOut.endAll(reason);
  }

  track(stopping: Promise<void>): void {
    this.#stopping.add(stopping);
    void stopping.finally(() => this.#stopping.delete(stopping));
  }

  /** How long the shared stream waits before it opens again (after failures; else 0). */
  restartDelay(): number {
    if (!this.#failure) return 0;
    return Math.max(0, this.#failure.atMs + restartDelayMs(this.#failure.count) - this.nowMs());
  }

  /** The shared stream stopped on an error reopening cannot clear. */
  sourceFailed(error: unknown): void {
    const count = (this.#failure?.count ?? 0) + 1;
    const message = error instanceof Error ? error.message : String(error);
    this.#failure = { message, atMs: this.nowMs(), count };
    this.stats.sourceFailures += 1;
    // Nothing may subscribe again on this instance (a standby): try again on its own.
    this.#recovery.schedule(restartDelayMs(count));
    this.warn(
      `ERROR: the change feed stopped (${message}); every stream and the webhook dispatcher ` +
        'were ended with "unavailable", and this instance reports not ready until the change ' +
        `stream reads again (next attempt in ${restartDelayMs(count)} ms). ` +
        'Check the database user’s privileges (changeStream and find on the Folio databases).',
    );
  }

  /** The shared stream read a batch: whatever failed before has cleared. */
  sourceReads(): void {
    if (!this.#failure) return;
    this.#failure = null;
    this.warn('the change feed reads again; this instance is ready');
  }

  // ------------------------------------------------------------------------------------------

  #subscribe(
    key: string | null,
    target: StreamTarget,
    options: WatchOptions | undefined,
  ): ChangeSubscription {
    const bufferLimit = options?.bufferLimit ?? DEFAULT_BUFFER_LIMIT;
    const onFinish = this.#detach;
    if (this.#closed) {
      const ended = new MongoSubscription(
        { key, bufferLimit, compare: compareTokens, onFinish },
        this.#published,
      );
      ended.end('store_closed');
      return ended;
    }
    const after = options?.after;
    if (after === undefined) {
      // Committed at or before `since` means before watch() returned (see clusterClock.ts).
      const since = this.clock.latest;
      const sub = new MongoSubscription(
        {
          key,
          bufferLimit,
          compare: compareTokens,
          onFinish,
          accepts: (event) => isAfterStart(since, this.#times.get(event)),
        },
        this.#published,
      );
      this.#fanOut.add(key, sub);
      void this.#source.ready.then(() => sub.markReady());
      this.#boundReady(sub);
      return sub;
    }
    const sub = new MongoSubscription(
      { key, bufferLimit, compare: compareTokens, onFinish },
      this.#published,
    );
    if (!isWellFormedToken(after)) {
      sub.end('invalid_token');
      return sub;
    }
    const token = normalizeToken(after);
    // Join the shared stream first: from now on it holds what it carries for the hand-over.
    this.#fanOut.add(key, sub);
    sub.catchUp(new ResumeCursor(this, target, key, token), token, this.#published);
    this.#boundReady(sub);
    return sub;
  }

  /** A subscription not ready within `streamReadyTimeoutMs` ends `unavailable`. */
  #boundReady(sub: FeedSubscription): void {
    const timer = setTimeout(() => {
      if (sub.closed) return;
      this.stats.readyTimeouts += 1;
      sub.end('unavailable');
    }, this.#limits.streamReadyTimeoutMs);
    timer.unref();
    void sub.ready.then(() => clearTimeout(timer));
  }

  #skipped(skipped: SkippedEvent): void {
    this.stats.skippedEvents += 1;
    const what = {
      too_large: 'is over MongoDB’s 16 MB limit and this server cannot split it (MongoDB 6.0.9+ can)',
      incomplete_split: 'was split by the server and its first fragments were not read (resumed half-way)',
      unreadable: `could not be read: the server failed on it (${skipped.error ?? 'unknown error'})`,
    }[skipped.why];
    this.warn(
      `ERROR: change feed skipped a ${skipped.operationType} event of ${skipped.namespace ?? 'an unknown namespace'}` +
        `${skipped.documentId === null ? '' : ` (document ${skipped.documentId})`}: it ${what}. ` +
        'Streams and webhooks do not see this change; the document itself is unaffected.',
    );
  }

  /** A change read by a catch-up stream: its event, null to skip, or the end of a collection. */
  #historyEvent(change: Change, target: StreamTarget): ChangeEvent | null {
    const kind = classifyChange(change);
    if (kind.kind === 'dropped') {
      if (target.kind === 'collection' && droppedBy(kind, keyOf(target.db, target.collection))) {
        throw new FeedEndError('invalidated');
      }
      return null;
    }
    if (kind.kind !== 'document') return null;
    return this.#map(change, kind)?.event ?? null;
  }

  #map(change: Change, kind: Extract<ChangeKind, { kind: 'document' }>): MappedChange | null {
    const scope = scopeFromDbName(this.dbPrefix, kind.db) ?? this.#scopes.get(kind.db);
    if (!scope) {
      // A hashed (non-canonical) project id nobody here watches: no one can want it by key.
      const note = this.#unknownDb.note();
      if (note.report) {
        this.warn(`change feed skips events of database ${kind.db}: its project id cannot be read back`);
      }
      return null;
    }
    const mapped = toChangeEvent(change, scope);
    if (!mapped) {
      this.stats.eventsWithoutImage += 1;
      const note = this.#withoutImage.note();
      if (note.report) {
        this.warn(
          `change feed skips a ${change.operationType} in ${kind.db}.${kind.collection} without its document image` +
            (note.suppressed > 0 ? ` (and ${note.suppressed} more since the last warning)` : '') +
            '; pre-images expired or were never recorded (see docs/mongodb.md). At most one such warning a minute.',
        );
      }
    }
    return mapped;
  }
}

/** Whether a drop/rename/dropDatabase ends the subscriptions of `key`. */
function droppedBy(kind: Extract<ChangeKind, { kind: 'dropped' }>, key: string): boolean {
  return kind.namespaces.some((ns) =>
    ns.collection === null ? key.startsWith(`${ns.db}.`) : key === keyOf(ns.db, ns.collection),
  );
}
