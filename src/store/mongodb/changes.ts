/**
 * The port's change feed on MongoDB change streams.
 *
 * One shared change stream per (project environment, collection) per process, opened with the
 * first subscriber and closed with the last, fanned out by `FanOut`; it watches the document
 * collection only, so version-sidecar writes never show up. Events carry the document at that
 * version (post-image) or, for deletes, just before (pre-image).
 *
 * - Without a token, a subscription starts "now": see clusterClock.ts for how the shared stream
 *   and each subscriber agree on that time without a gap.
 * - With a token, the subscription catches up on a private stream and then moves onto the
 *   shared one (resumeMerge.ts), so resumed clients do not each keep a cursor.
 */
import type { Collection, MongoClient, Timestamp } from 'mongodb';
import { FanOut, QueueSubscription } from '../fanOut.js';
import type { ChangeEvent, ChangeFeed, ChangeFeedEnd, ChangeSubscription, DataScope } from '../port.js';
import type { StoredDocument } from '../storedForm.js';
import {
  CHANGE_STREAM_OPTIONS,
  isWellFormedToken,
  type MappedChange,
  tokenFromString,
} from './changeEvents.js';
import { ChangeStreamPump } from './changeStreamPump.js';
import { type ClusterClock, isAfterStart } from './clusterClock.js';
import { assertCollectionName, projectDbName } from './naming.js';
import { ResumeMerge } from './resumeMerge.js';

/** A clock value older than this is not used to start a stream (it would replay from there). */
const FRESH_CLOCK_MS = 30_000;

type TimeOf = (event: ChangeEvent) => Timestamp | undefined;

/** A subscriber from "now": drops what the shared stream carries from before it subscribed. */
class LiveSubscription extends QueueSubscription {
  constructor(
    private readonly since: Timestamp | null,
    private readonly timeOf: TimeOf,
    onClose: (sub: QueueSubscription) => void,
  ) {
    super(onClose);
  }

  override push(event: ChangeEvent): void {
    // At or before `since`: committed before watch() returned (see clusterClock.ts).
    if (isAfterStart(this.since, this.timeOf(event))) super.push(event);
  }
}

/** A subscriber resuming after a token: private catch-up stream, then the shared one. */
class ResumedSubscription extends QueueSubscription {
  readonly #merge = new ResumeMerge();
  #private: ChangeStreamPump | null = null;
  #sharedDone = false;

  /** Wired by the feed: the private stream is no longer needed (the merge moved to shared). */
  onPrivateDone: () => void = () => {};
  /** Wired by the feed: the merge gave up on the shared stream (see ResumeMerge's limit). */
  onSharedDone: () => void = () => {};

  attachPrivate(pump: ChangeStreamPump): void {
    this.#private = pump;
  }

  /** From the shared stream (the fan-out calls this for every event). */
  override push(event: ChangeEvent): void {
    for (const e of this.#merge.fromShared(event)) super.push(e);
    this.#afterMerge();
  }

  fromPrivate(event: ChangeEvent): void {
    for (const e of this.#merge.fromPrivate(event)) super.push(e);
    this.#afterMerge();
  }

  #afterMerge(): void {
    const state = this.#merge.state;
    if (state === 'shared' && this.#private) {
      this.#private = null;
      this.onPrivateDone();
    } else if (state === 'private-only' && !this.#sharedDone) {
      this.#sharedDone = true;
      this.onSharedDone();
    }
  }
}

export class MongoChangeFeed implements ChangeFeed {
  readonly #fanOut: FanOut<string>;
  /** Private catch-up streams, so `close()` can stop them and `sourceCount` can count them. */
  readonly #private = new Set<ChangeStreamPump>();
  /** Stream closes still in flight; `close()` waits for them before the client closes. */
  readonly #stopping = new Set<Promise<void>>();
  /** Cluster time of each event handed out, for the "from now" filter (no field on the event). */
  readonly #times = new WeakMap<ChangeEvent, Timestamp>();
  #closed = false;

  constructor(
    private readonly client: MongoClient,
    private readonly dbPrefix: string,
    private readonly clock: ClusterClock,
  ) {
    this.#fanOut = new FanOut<string>((key, emit, end) => this.#openShared(key, emit, end));
  }

  /** Change streams this process holds open: one per watched collection, plus catch-ups. */
  get sourceCount(): number {
    return this.#fanOut.sourceCount + this.#private.size;
  }

  watch(scope: DataScope, collection: string, options?: { after?: string | undefined }): ChangeSubscription {
    assertCollectionName(collection);
    // Database names cannot contain `.`, so the first dot splits the key again (#target).
    const key = `${projectDbName(this.dbPrefix, scope)}.${collection}`;
    if (this.#closed) {
      const ended = new QueueSubscription();
      ended.end('store_closed');
      return ended;
    }
    const after = options?.after;
    if (after !== undefined) return this.#resume(key, after);
    const sub = new LiveSubscription(
      this.clock.latest,
      (e) => this.#times.get(e),
      (s) => this.#fanOut.unsubscribe(key, s),
    );
    this.#fanOut.subscribe(key, sub);
    return sub;
  }

  /** End every subscription with `store_closed` and close every stream. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const pump of this.#private) this.#track(pump.stop());
    this.#private.clear();
    this.#fanOut.closeAll('store_closed');
    await Promise.all([...this.#stopping]);
  }

  #target(key: string): { collection: Collection<StoredDocument>; name: string } {
    const dot = key.indexOf('.');
    const name = key.slice(dot + 1);
    return { collection: this.client.db(key.slice(0, dot)).collection<StoredDocument>(name), name };
  }

  #resume(key: string, after: string): ChangeSubscription {
    let pump: ChangeStreamPump | null = null;
    const stopPrivate = () => {
      if (!pump) return;
      this.#private.delete(pump);
      this.#track(pump.stop());
      pump = null;
    };
    const sub = new ResumedSubscription((s) => {
      stopPrivate();
      this.#fanOut.unsubscribe(key, s);
    });
    if (!isWellFormedToken(after)) {
      // Not a token this store ever issued: there is no history to resume from.
      sub.end('history_lost');
      return sub;
    }
    sub.onPrivateDone = stopPrivate;
    sub.onSharedDone = () => this.#fanOut.unsubscribe(key, sub);
    // Join the shared stream first: from this moment on, what it carries is buffered for the
    // merge, while the private stream replays from the token.
    this.#fanOut.subscribe(key, sub);
    const target = this.#target(key);
    const stream = target.collection.watch<StoredDocument>([], {
      ...CHANGE_STREAM_OPTIONS,
      startAfter: tokenFromString(after),
    });
    pump = new ChangeStreamPump(stream, target.name, {
      change: (mapped) => sub.fromPrivate(this.#record(mapped)),
      end: (reason) => sub.end(reason),
    });
    this.#private.add(pump);
    sub.attachPrivate(pump);
    pump.start();
    return sub;
  }

  #openShared(key: string, emit: (e: ChangeEvent) => void, end: (r: ChangeFeedEnd) => void): () => void {
    const target = this.#target(key);
    // Start at the newest time known to have passed (inclusive: subscribers drop what is not
    // after their own start). A stale or unknown time: start at the server's present instead.
    const start = this.clock.fresh(FRESH_CLOCK_MS);
    const stream = target.collection.watch<StoredDocument>([], {
      ...CHANGE_STREAM_OPTIONS,
      ...(start ? { startAtOperationTime: start } : {}),
    });
    const pump = new ChangeStreamPump(stream, target.name, {
      change: (mapped) => emit(this.#record(mapped)),
      end,
    });
    pump.start();
    return () => this.#track(pump.stop());
  }

  /** Advance the clock before anyone sees the event, so a later watch() starts after it. */
  #record(mapped: MappedChange): ChangeEvent {
    if (mapped.clusterTime) {
      this.clock.observe(mapped.clusterTime);
      this.#times.set(mapped.event, mapped.clusterTime);
    }
    return mapped.event;
  }

  #track(stopping: Promise<void>): void {
    this.#stopping.add(stopping);
    void stopping.finally(() => this.#stopping.delete(stopping));
  }
}
