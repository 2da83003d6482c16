/**
 * How a resumed subscription of the MongoDB change feed (changes.ts) reads what it missed: from
 * the shared stream's ring while it covers the token, else on a catch-up stream of its own,
 * at most `maxCatchUpStreams` at a time.
 */
import { FeedEndError, type HistoryCursor, type HistoryPage } from '../../changeFeed/subscription.js';
import type { ChangeEvent } from '../../port.js';
import type { CatchUpLimiter, Release } from './catchUpLimiter.js';
import type { StreamTarget } from './changeEvents.js';
import type { EventRing } from './eventRing.js';
import type { Change, ReopeningChangeStream } from './reopeningStream.js';

/** What a resume asks of its feed (MongoChangeFeed). */
export interface ResumeFeed {
  readonly ring: EventRing;
  readonly catchUps: CatchUpLimiter;
  readonly stats: { ringResumes: number; catchUpResumes: number; catchUpRefused: number };
  openCatchUp(after: string, target: StreamTarget, clientToken: boolean): StreamCursor;
}

/** A resumed subscription's own read of history, on its own stream. */
export class StreamCursor implements HistoryCursor {
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

/**
 * A resumed subscription's read of what it missed: from the ring while the ring covers its
 * position, else (or once the ring moved past it) from a catch-up stream of its own.
 */
export class ResumeCursor implements HistoryCursor {
  #position: string;
  #stream: StreamCursor | null = null;
  #release: Release | null = null;
  #closed = false;
  #counted = false;

  constructor(
    private readonly feed: ResumeFeed,
    private readonly target: StreamTarget,
    private readonly key: string | null,
    private readonly clientToken: string,
  ) {
    this.#position = clientToken;
  }

  async read(max: number): Promise<HistoryPage> {
    if (!this.#stream) {
      const page = this.feed.ring.read(this.#position, this.key, max);
      if (page) {
        this.#count('ring');
        const events: ChangeEvent[] = [];
        for (const entry of page.entries) {
          // A drop of this collection after the token: its subscriptions end.
          if (!('event' in entry)) throw new FeedEndError('invalidated');
          events.push(entry.event);
        }
        if (page.scannedTo !== null) this.#position = page.scannedTo;
        return { events, scannedTo: page.scannedTo };
      }
      this.#count('catch_up');
      const release = await this.feed.catchUps.acquire();
      if (this.#closed) {
        release?.();
        return { events: [], scannedTo: null };
      }
      if (!release) {
        this.feed.stats.catchUpRefused += 1;
        throw new FeedEndError('unavailable');
      }
      this.#release = release;
      this.#stream = this.feed.openCatchUp(this.#position, this.target, this.#position === this.clientToken);
    }
    return this.#stream.read(max);
  }

  close(): void {
    this.#closed = true;
    this.#stream?.close();
    this.#stream = null;
    this.#release?.();
    this.#release = null;
  }

  #count(source: 'ring' | 'catch_up'): void {
    if (this.#counted) return;
    this.#counted = true;
    if (source === 'ring') this.feed.stats.ringResumes += 1;
    else this.feed.stats.catchUpResumes += 1;
  }
}
