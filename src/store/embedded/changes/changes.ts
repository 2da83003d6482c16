/**
 * The embedded change feed: one tail of the change log (`changeLog.ts`) per process, fanned out
 * to every subscription. The embedded store serves one process, so the tail wakes on that
 * process's own commits (`committed()`, called right after each commit) and also polls every
 * `POLL_MS` for rows another connection to the same file (a CLI next to the server) committed.
 * This process's own rows it takes from the log as they were appended (ChangeLog.takeOwnAfter),
 * not from the table, whenever they follow on from the last row it published.
 */
import { ChangeFanOut, type ChangeSource } from '../../changeFeed/fanOut.js';
import {
  FeedEndError,
  FeedSubscription,
  type HistoryCursor,
  type HistoryPage,
} from '../../changeFeed/subscription.js';
import {
  type ChangeFeed,
  type ChangeFeedEnd,
  type ChangeSubscription,
  type DataScope,
  DEFAULT_BUFFER_LIMIT,
  type WatchOptions,
} from '../../port.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { type ChangeLog, compareSeqTokens, feedKey, type LoggedChange, parseSeqToken } from './changeLog.js';

/** How often the tail looks for rows committed by other connections. */
const POLL_MS = 500;
/** Rows the tail reads per query. */
const TAIL_PAGE = 1000;
/**
 * The most document text one catch-up page reads (one row at least): a stream replays a
 * backlog a page at a time as its client takes it, so this is what a replay holds in memory.
 */
const CATCH_UP_PAGE_BYTES = 1024 * 1024;

/** The one live source: publishes every new row of the change log, in seq order. */
class ChangeLogTail implements ChangeSource {
  readonly ready = Promise.resolve();
  #lastSeq = 0;
  #running = false;
  #polling = false;
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly log: ChangeLog,
    private readonly publish: (change: LoggedChange) => void,
  ) {}

  get position(): string {
    return String(this.#lastSeq);
  }

  get running(): boolean {
    return this.#running;
  }

  start(): void {
    this.#running = true;
    this.log.keepOwnRows(true);
    this.#lastSeq = this.log.lastVisible();
    this.#timer = setInterval(() => this.poll(), POLL_MS);
    this.#timer.unref();
  }

  stop(): void {
    this.#running = false;
    this.log.keepOwnRows(false);
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** Publish every row committed since the last poll. Synchronous: no commit interleaves. */
  poll(): void {
    // A publish can end subscriptions and stop the tail; never re-enter.
    if (!this.#running || this.#polling) return;
    this.#polling = true;
    try {
      while (this.#running) {
        // This process's own commits, as appended: nothing to read back.
        const own = this.log.takeOwnAfter(this.#lastSeq);
        if (own !== null) {
          for (const row of own) {
            this.#lastSeq = row.seq;
            this.publish(row);
          }
          // Kept rows after a gap (another connection's rows first) come from the table next.
          if (own.length > 0 && this.log.ownRowsLeft) continue;
          break;
        }
        const rows = this.log.after(this.#lastSeq, TAIL_PAGE);
        for (const row of rows) {
          this.#lastSeq = row.seq;
          this.publish(row);
        }
        if (rows.length < TAIL_PAGE) break;
      }
    } finally {
      this.#polling = false;
    }
  }
}

/** A subscription's own read of the log from its token, one page at a time. */
class ChangeLogCursor implements HistoryCursor {
  #after: number;

  constructor(
    private readonly log: ChangeLog,
    after: number,
    /** One scope's collection, or null for every change. */
    private readonly only: { scopeKey: string; collection: string } | null,
    private readonly onClose: (cursor: ChangeLogCursor) => void,
  ) {
    this.#after = after;
  }

  async read(max: number): Promise<HistoryPage> {
    // Pruning removes a prefix of the log: a slow catch-up can fall off it.
    if (this.log.isLost(this.#after)) throw new FeedEndError('history_lost');
    // Read before the rows: a short page then covers at least everything up to it (never past
    // rows held back until they are on disk: the tail publishes those later).
    const lastVisible = this.log.lastVisible();
    const { changes, full } = this.log.page(this.only, this.#after, max, CATCH_UP_PAGE_BYTES);
    const last = changes.at(-1);
    if (last) this.#after = last.seq;
    const scannedTo = full ? this.#after : Math.max(lastVisible, this.#after);
    return { events: changes.map((row) => row.event), scannedTo: String(scannedTo) };
  }

  close(): void {
    this.onClose(this);
  }
}

export class EmbeddedChangeFeed implements ChangeFeed {
  readonly #fanOut: ChangeFanOut;
  readonly #tail: ChangeLogTail;
  readonly #cursors = new Set<ChangeLogCursor>();
  #closed = false;
  /** Every subscription's `onFinish`: one function, not one closure per subscription. */
  readonly #detach = (sub: FeedSubscription) => this.#fanOut.remove(sub.key, sub);

  constructor(
    private readonly log: ChangeLog,
    private readonly retentionMs: number,
  ) {
    this.#tail = new ChangeLogTail(log, (change) => this.#fanOut.publish(change.key, change.event));
    this.#fanOut = new ChangeFanOut(this.#tail);
  }

  /** The one tail of the change log, while anyone subscribes: 0 or 1. */
  get sourceCount(): number {
    return this.#fanOut.sourceCount;
  }

  /** Catch-up reads open now (each closes as soon as its subscription caught up). */
  get catchUpCount(): number {
    return this.#cursors.size;
  }

  /**
   * A group of this process's commits just landed: on disk (`durable`), which also carries every
   * deferred commit before it, so the log shows all its rows and the tail publishes them; or
   * deferred, its rows still held back (`held`, called before it).
   */
  committed(durable: boolean): void {
    if (!durable) return;
    this.log.release();
    this.#tail.poll();
  }

  /** The next group commits without its sync: hold its rows back from every reader. */
  held(): void {
    this.log.hold();
  }

  watch(scope: DataScope, collection: string, options?: WatchOptions): ChangeSubscription {
    const scopeKey = scopeKeyOf(scope);
    return this.#subscribe(feedKey(scopeKey, collection), { scopeKey, collection }, options);
  }

  watchAll(options?: WatchOptions): ChangeSubscription {
    return this.#subscribe(null, null, options);
  }

  /**
   * Delete events older than the retention period, in chunks that let other work run between
   * them; how many went.
   */
  prune(nowMs: number = Date.now()): Promise<number> {
    return this.log.prune(new Date(nowMs - this.retentionMs).toISOString());
  }

  /** Whether a prune is under way (the timer skips its turn rather than queue another). */
  get pruning(): boolean {
    return this.log.pruning;
  }

  /** Stop pruning (the store closes): no chunk after this; waits for the one under way. */
  stopPruning(): Promise<void> {
    return this.log.stopPruning();
  }

  /** End every subscription; later `watch` calls end at once with `store_closed`. */
  close(reason: ChangeFeedEnd = 'store_closed'): void {
    this.#closed = true;
    this.#fanOut.endAll(reason);
  }

  #subscribe(
    key: string | null,
    only: { scopeKey: string; collection: string } | null,
    options: WatchOptions | undefined,
  ): ChangeSubscription {
    const sub = new FeedSubscription({
      key,
      bufferLimit: options?.bufferLimit ?? DEFAULT_BUFFER_LIMIT,
      compare: compareSeqTokens,
      onFinish: this.#detach,
    });
    if (this.#closed) {
      sub.end('store_closed');
      return sub;
    }
    const after = options?.after;
    if (after === undefined) {
      // Hand what is already committed to the current subscribers first: this one starts after.
      this.#tail.poll();
      this.#fanOut.add(key, sub);
      sub.markReady();
      return sub;
    }
    const seq = parseSeqToken(after);
    if (seq === null || seq > this.log.lastIssued()) {
      sub.end('invalid_token');
      return sub;
    }
    if (this.log.isLost(seq)) {
      sub.end('history_lost');
      return sub;
    }
    this.#fanOut.add(key, sub);
    const cursor = new ChangeLogCursor(this.log, seq, only, (c) => this.#cursors.delete(c));
    this.#cursors.add(cursor);
    sub.catchUp(cursor, String(seq), () => this.#tail.position);
    return sub;
  }
}
