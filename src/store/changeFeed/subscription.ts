/**
 * One subscription of a store's change feed, shared by both stores: a bounded queue that the
 * live fan-out pushes into, and, for a subscription resuming after a token, the catch-up from
 * history and the hand-over to the live fan-out without a gap or a duplicate.
 *
 * The hand-over (`catchUp`): the subscription joins the fan-out at once, holding what it
 * carries, and reads history from its token with its own cursor. `joinAt` is the live source's
 * position when the subscription joined (or the first one known after, if the source was still
 * opening): the source delivers every event after it. Once the history read has delivered
 * everything up to `joinAt` (an event beyond it, or a read that scanned past it), the cursor is
 * closed and the held live events follow, minus those already delivered (tokens only grow). So
 * the cursor closes as soon as history is caught up, never waiting for the next write.
 */
import type { ChangeEvent, ChangeFeedEnd, ChangeSubscription } from '../port.js';

/** Ends a subscription for a reason of the port's (thrown by history cursors). */
export class FeedEndError extends Error {
  constructor(readonly reason: ChangeFeedEnd) {
    super(`change feed ended: ${reason}`);
    this.name = 'FeedEndError';
  }
}

export interface HistoryPage {
  /** Events after the previous page, in token order (at most the `max` asked for). */
  events: ChangeEvent[];
  /**
   * Every event of interest up to this position has now been returned (null while unknown).
   * May lie beyond the last event: positions advance over other collections' events too.
   */
  scannedTo: string | null;
}

/** A store's read of its retained history, from a token on. */
export interface HistoryCursor {
  /** The next page; rejects with FeedEndError when the history is gone or the token is bad. */
  read(max: number): Promise<HistoryPage>;
  /** Release the cursor (idempotent). */
  close(): void;
}

export interface SubscriptionSettings {
  bufferLimit: number;
  /** Orders two tokens (or positions) of this store: negative, zero or positive. */
  compare(a: string, b: string): number;
  /** The fan-out key it is attached under (null: every event); read back by `onFinish`. */
  key?: string | null | undefined;
  /**
   * Called once when the subscription finishes, whatever the reason. Pass one function for all
   * subscriptions (it gets the subscription and its `key`), not a closure per subscription.
   */
  onFinish(sub: FeedSubscription): void;
  /** Live events to ignore (a "from now" subscription drops what committed before it began). */
  accepts?: ((event: ChangeEvent) => boolean) | undefined;
}

const READY = Promise.resolve();

/** Most events one history read asks for. */
const MAX_PAGE = 500;

export class FeedSubscription implements ChangeSubscription {
  endedBy: ChangeFeedEnd | null = null;
  /** Set by the fan-out when it joins (see the port); a catch-up subscription never needs it. */
  startPosition: string | null = null;

  #items: (ChangeEvent | undefined)[] = [];
  #head = 0;
  /** Live events held while catching up; null once live. */
  #held: ChangeEvent[] | null = null;
  /** The last token queued: nothing at or before it is queued again. */
  #last: string | null = null;
  #closed = false;
  #cursor: HistoryCursor | null = null;
  #wake: (() => void) | null = null;
  #listener: (() => void) | null = null;
  #room: (() => void) | null = null;
  /** The consumer's client has not taken the last page yet: read no more history (holdHistory). */
  #historyHeld = false;
  #isReady = false;
  /** Made only when someone waits before it is ready: most never do, and an idle one is small. */
  #readyWait: { promise: Promise<void>; resolve: () => void } | null = null;

  constructor(private readonly settings: SubscriptionSettings) {}

  get ready(): Promise<void> {
    if (this.#isReady) return READY;
    if (!this.#readyWait) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.#readyWait = { promise, resolve };
    }
    return this.#readyWait.promise;
  }

  get key(): string | null {
    return this.settings.key ?? null;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Events queued or held, not yet taken by the consumer. */
  get pending(): number {
    return this.#items.length - this.#head + (this.#held?.length ?? 0);
  }

  /** Whether it is still reading history (its catch-up cursor is open). */
  get catchingUp(): boolean {
    return this.#held !== null;
  }

  markReady(): void {
    this.#isReady = true;
    this.#readyWait?.resolve();
    this.#readyWait = null;
  }

  /** An event from the live fan-out. */
  deliver(event: ChangeEvent): void {
    if (this.#closed) return;
    if (this.#held) {
      this.#held.push(event);
      this.#checkLimit();
      return;
    }
    if (this.settings.accepts && !this.settings.accepts(event)) return;
    this.#enqueue(event);
  }

  /**
   * Catch up from history after `after`, then move to the live events (see the module comment).
   * Call right after joining the fan-out; `livePosition` reads the live source's position.
   */
  catchUp(cursor: HistoryCursor, after: string, livePosition: () => string | null): void {
    this.#last = after;
    this.#held = [];
    this.#cursor = cursor;
    void this.#runCatchUp(cursor, livePosition);
  }

  /** End from the feed's side; the iterator finishes at once. */
  end(reason: ChangeFeedEnd): void {
    if (this.#closed) return;
    this.endedBy = reason;
    this.#finish();
  }

  close(): void {
    this.#finish();
  }

  take(): ChangeEvent | undefined {
    return this.#closed ? undefined : this.#take();
  }

  onQueued(listener: (() => void) | null): void {
    this.#listener = listener;
  }

  holdHistory(hold: boolean): void {
    this.#historyHeld = hold;
    if (!hold && this.#queued === 0) this.#signalRoom();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ChangeEvent> {
    while (true) {
      if (this.#closed) return;
      const next = this.#take();
      if (next) {
        yield next;
        continue;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  #take(): ChangeEvent | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const event = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    // Compact now and then, so a long-lived queue does not keep a long dead prefix.
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    if (this.#room && this.#queued === 0) this.#signalRoom();
    return event;
  }

  #enqueue(event: ChangeEvent): void {
    if (this.#last !== null && this.settings.compare(event.token, this.#last) <= 0) return;
    this.#last = event.token;
    this.#items.push(event);
    if (this.#checkLimit()) this.#signalWake();
  }

  /** False (and ended) when over the limit. */
  #checkLimit(): boolean {
    if (this.pending <= this.settings.bufferLimit) return true;
    this.end('overflow');
    return false;
  }

  /** Events queued and not taken (while catching up: the history pages read). */
  get #queued(): number {
    return this.#items.length - this.#head;
  }

  async #runCatchUp(cursor: HistoryCursor, livePosition: () => string | null): Promise<void> {
    const { compare } = this.settings;
    let joinAt = livePosition();
    try {
      while (!this.#closed) {
        // A page at a time, once the consumer took the last one (and its client too: holdHistory),
        // so a catch-up holds one page of history in memory, not the backlog.
        if (this.#queued > 0 || this.#historyHeld) {
          await new Promise<void>((resolve) => {
            this.#room = resolve;
          });
          continue;
        }
        const max = Math.max(1, Math.min(MAX_PAGE, this.settings.bufferLimit - this.pending));
        const page = await cursor.read(max);
        if (this.#closed) return;
        joinAt ??= livePosition();
        let caughtUp = false;
        for (const event of page.events) {
          if (joinAt !== null && compare(event.token, joinAt) > 0) {
            // The live source has not delivered this one yet: it will, to the held events.
            caughtUp = true;
            break;
          }
          this.#enqueue(event);
          if (this.#closed) return;
        }
        if (joinAt !== null && page.scannedTo !== null && compare(page.scannedTo, joinAt) >= 0) {
          caughtUp = true;
        }
        this.markReady();
        if (caughtUp) {
          this.#join();
          return;
        }
      }
    } catch (error) {
      // Cursors turn what they understand into FeedEndError; anything else means their store
      // went away under them (a closed database).
      this.end(error instanceof FeedEndError ? error.reason : 'store_closed');
    }
  }

  /** History is delivered up to the live source's join position: go live. */
  #join(): void {
    const held = this.#held ?? [];
    this.#held = null;
    this.#closeCursor();
    for (const event of held) {
      this.#enqueue(event);
      if (this.#closed) return;
    }
  }

  #closeCursor(): void {
    const cursor = this.#cursor;
    this.#cursor = null;
    cursor?.close();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#items = [];
    this.#head = 0;
    this.#held = null;
    this.#closeCursor();
    this.settings.onFinish(this);
    this.markReady();
    this.#signalWake();
    this.#listener = null;
    this.#signalRoom();
  }

  #signalWake(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
    this.#listener?.();
  }

  #signalRoom(): void {
    const room = this.#room;
    this.#room = null;
    room?.();
  }
}
