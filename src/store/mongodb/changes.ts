/**
 * The port's change feed on MongoDB: ONE change stream per process over every Folio project
 * database (`client.watch()` with a `$match` on the database names, changeEvents.ts), reopened
 * from its last token with backoff on any transient failure (reopeningStream.ts), fanned out to
 * subscriptions keyed by `<database>.<collection>` and to `watchAll`. Tokens are MongoDB resume
 * tokens, valid on every instance of the deployment.
 *
 * - Without a token, a subscription starts "now": see clusterClock.ts for how the stream and
 *   each subscriber agree on that time without a gap (`accepts` drops what committed before).
 * - With a token, the subscription reads history on its own stream, narrowed to its collection,
 *   and hands over to the shared stream (changeFeed/subscription.ts) as soon as that read has
 *   scanned past the shared stream's position: the catch-up stream then closes.
 */
import type { MongoClient, Timestamp } from 'mongodb';
import { ChangeFanOut, type ChangeSource } from '../changeFeed/fanOut.js';
import {
  FeedEndError,
  FeedSubscription,
  type HistoryCursor,
  type HistoryPage,
} from '../changeFeed/subscription.js';
import {
  type ChangeEvent,
  type ChangeFeed,
  type ChangeSubscription,
  type DataScope,
  DEFAULT_BUFFER_LIMIT,
  type WatchOptions,
} from '../port.js';
import type { StoredDocument } from '../storedForm.js';
import {
  CHANGE_STREAM_OPTIONS,
  type ChangeKind,
  changeStreamPipeline,
  classifyChange,
  compareTokens,
  isWellFormedToken,
  type MappedChange,
  normalizeToken,
  type StreamTarget,
  toChangeEvent,
  tokenFromString,
} from './changeEvents.js';
import { type ClusterClock, isAfterStart } from './clusterClock.js';
import { assertCollectionName, projectDbName, scopeFromDbName } from './naming.js';
import { type Change, ReopeningChangeStream, type StreamStart } from './reopeningStream.js';

/** A clock value older than this is not used to start a stream (it would replay from there). */
const FRESH_CLOCK_MS = 30_000;

/** Reports what the feed skips or retries (the store has no logger of its own). */
export type FeedWarning = (message: string) => void;

function keyOf(db: string, collection: string): string {
  // Database names cannot contain `.`: the first dot splits the key again.
  return `${db}.${collection}`;
}

/** The shared live stream. */
class ClusterSource implements ChangeSource {
  #stream: ReopeningChangeStream | null = null;
  #ready: Promise<void> = Promise.resolve();

  constructor(private readonly feed: MongoChangeFeed) {}

  get position(): string | null {
    return this.#stream?.position ?? null;
  }

  get ready(): Promise<void> {
    return this.#ready;
  }

  start(): void {
    const stream = this.feed.openStream(
      this.feed.liveStart(),
      { kind: 'all', prefix: this.feed.dbPrefix },
      false,
    );
    this.#stream = stream;
    let markReady!: () => void;
    this.#ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    void this.#run(stream, markReady);
  }

  stop(): void {
    const stream = this.#stream;
    this.#stream = null;
    if (stream) this.feed.track(stream.close());
  }

  async #run(stream: ReopeningChangeStream, markReady: () => void): Promise<void> {
    try {
      while (!stream.closed) {
        const change = await stream.tryNext();
        if (stream.closed) break;
        markReady();
        if (change) this.feed.dispatch(change);
      }
    } catch (error) {
      // The shared stream's own position is gone (an outage longer than the oplog window):
      // nobody can be told what they missed.
      if (this.#stream === stream) {
        this.feed.endAll(error instanceof FeedEndError ? error.reason : 'history_lost');
      }
    } finally {
      markReady();
    }
  }
}

/** A resumed subscription's own read of history, on its own stream. */
class StreamCursor implements HistoryCursor {
  constructor(
    private readonly stream: ReopeningChangeStream,
    private readonly map: (change: Change) => ChangeEvent | null,
    private readonly onClose: (cursor: StreamCursor) => void,
  ) {}

  async read(max: number): Promise<HistoryPage> {
    const events: ChangeEvent[] = [];
    let change = await this.stream.tryNext();
    while (change) {
      const event = this.map(change);
      if (event) events.push(event);
      // Stop at a batch's end: the position is then the server's post-batch token.
      if (events.length >= max || this.stream.bufferedCount() === 0) break;
      change = await this.stream.tryNext();
    }
    return { events, scannedTo: this.stream.position };
  }

  close(): void {
    this.onClose(this);
  }
}

export class MongoChangeFeed implements ChangeFeed {
  readonly #fanOut: ChangeFanOut;
  readonly #source: ClusterSource;
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
  #warnedUnknownDb = false;

  constructor(
    private readonly client: MongoClient,
    readonly dbPrefix: string,
    private readonly clock: ClusterClock,
    private readonly warn: FeedWarning = (message) => process.emitWarning(message, 'FolioChangeFeed'),
    /** Told of every dropped or renamed namespace (`collection` null: a whole database). */
    private readonly onDropped: (db: string, collection: string | null) => void = () => {},
  ) {
    this.#source = new ClusterSource(this);
    this.#fanOut = new ChangeFanOut(this.#source);
  }

  /** Change streams shared by all subscriptions: 0 or 1. */
  get sourceCount(): number {
    return this.#fanOut.sourceCount;
  }

  /** Catch-up streams open now (each closes as soon as its subscription caught up). */
  get catchUpCount(): number {
    return this.#cursors.size;
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
    for (const stream of this.#cursors.values()) this.track(stream.close());
    this.#cursors.clear();
    await Promise.all([...this.#stopping]);
  }

  // --- used by ClusterSource -------------------------------------------------------------

  /** Where the shared stream starts: the newest time known to have passed, if fresh. */
  liveStart(): StreamStart {
    // Inclusive: subscribers drop what is not after their own start. A stale or unknown time:
    // start at the server's present instead (a stale one would replay everything since).
    const start = this.clock.fresh(FRESH_CLOCK_MS);
    return start ? { startAtOperationTime: start } : {};
  }

  openStream(start: StreamStart, target: StreamTarget, clientToken: boolean): ReopeningChangeStream {
    return new ReopeningChangeStream({
      open: (from) =>
        this.client.watch<StoredDocument, Change>(changeStreamPipeline(target), {
          ...CHANGE_STREAM_OPTIONS,
          ...from,
        }),
      start,
      clientToken,
      onRetry: (error, delayMs) =>
        this.warn(`change stream failed (${(error as Error).message}); reopening in ${delayMs} ms`),
    });
  }

  /** One change from the shared stream: publish it, or end what a drop ends. */
  dispatch(change: Change): void {
    const kind = classifyChange(change);
    if (kind.kind === 'dropped') {
      // The next write to a dropped collection re-creates it with its images, at once.
      for (const ns of kind.namespaces) this.onDropped(ns.db, ns.collection);
      this.#fanOut.endKeys((key) => droppedBy(kind, key), 'invalidated');
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
    this.#fanOut.publish(keyOf(kind.db, kind.collection), mapped.event);
  }

  endAll(reason: Parameters<ChangeFanOut['endAll']>[0]): void {
    this.#fanOut.endAll(reason);
  }

  track(stopping: Promise<void>): void {
    this.#stopping.add(stopping);
    void stopping.finally(() => this.#stopping.delete(stopping));
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
      const ended = new FeedSubscription({ key, bufferLimit, compare: compareTokens, onFinish });
      ended.end('store_closed');
      return ended;
    }
    const after = options?.after;
    if (after === undefined) {
      // Committed at or before `since` means before watch() returned (see clusterClock.ts).
      const since = this.clock.latest;
      const sub = new FeedSubscription({
        key,
        bufferLimit,
        compare: compareTokens,
        onFinish,
        accepts: (event) => isAfterStart(since, this.#times.get(event)),
      });
      this.#fanOut.add(key, sub);
      void this.#source.ready.then(() => sub.markReady());
      return sub;
    }
    const sub = new FeedSubscription({ key, bufferLimit, compare: compareTokens, onFinish });
    if (!isWellFormedToken(after)) {
      sub.end('invalid_token');
      return sub;
    }
    const token = normalizeToken(after);
    // Join the shared stream first: from now on it holds what it carries for the hand-over.
    this.#fanOut.add(key, sub);
    const stream = this.openStream({ startAfter: tokenFromString(token) }, target, true);
    const cursor = new StreamCursor(
      stream,
      (change) => this.#historyEvent(change, target),
      (c) => {
        this.#cursors.delete(c);
        this.track(stream.close());
      },
    );
    this.#cursors.set(cursor, stream);
    sub.catchUp(cursor, token, () => this.#source.position);
    return sub;
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
      if (!this.#warnedUnknownDb) {
        this.#warnedUnknownDb = true;
        this.warn(`change feed skips events of database ${kind.db}: its project id cannot be read back`);
      }
      return null;
    }
    const mapped = toChangeEvent(change, scope);
    if (!mapped) {
      this.warn(
        `change feed skips a ${change.operationType} in ${kind.db}.${kind.collection} without its document image`,
      );
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
