/**
 * The MongoDB change feed's shared live stream (changes.ts): one per process, opened after a
 * growing pause when reopening could not clear a failure, publishing every change it reads to
 * the feed and its ring, and ending every subscription when it cannot go on.
 */
import type { ChangeSource } from '../changeFeed/fanOut.js';
import { FeedEndError } from '../changeFeed/subscription.js';
import type { ChangeFeedEnd } from '../port.js';
import type { StreamTarget } from './changeEvents.js';
import type { EventRing } from './eventRing.js';
import type { Change, ReopeningChangeStream, StreamStart } from './reopeningStream.js';

/** What the shared stream asks of its feed (MongoChangeFeed). */
export interface SourceFeed {
  readonly ring: EventRing;
  readonly dbPrefix: string;
  liveStart(): StreamStart;
  openStream(start: StreamStart, target: StreamTarget, clientToken: boolean): ReopeningChangeStream;
  dispatch(change: Change): void;
  endAll(reason: ChangeFeedEnd): void;
  track(stopping: Promise<void>): void;
  restartDelay(): number;
  sourceFailed(error: unknown): void;
  sourceReads(): void;
}

/** The shared live stream. */
export class ClusterSource implements ChangeSource {
  #stream: ReopeningChangeStream | null = null;
  #ready: Promise<void> = Promise.resolve();
  /** Everything up to here was published (the fan-out and the ring have it). */
  #published: string | null = null;
  #opening: NodeJS.Timeout | null = null;

  constructor(private readonly feed: SourceFeed) {}

  get position(): string | null {
    return this.#published;
  }

  get ready(): Promise<void> {
    return this.#ready;
  }

  start(): void {
    // A new stream starts from about now: whatever the ring held may be followed by a gap.
    this.feed.ring.clear();
    this.#published = null;
    let markReady!: () => void;
    this.#ready = new Promise<void>((resolve) => {
      markReady = resolve;
    });
    const delay = this.feed.restartDelay();
    if (delay === 0) {
      this.#open(markReady);
      return;
    }
    this.#opening = setTimeout(() => {
      this.#opening = null;
      this.#open(markReady);
    }, delay);
    this.#opening.unref();
  }

  stop(): void {
    if (this.#opening) clearTimeout(this.#opening);
    this.#opening = null;
    const stream = this.#stream;
    this.#stream = null;
    if (stream) this.feed.track(stream.close());
  }

  #open(markReady: () => void): void {
    const stream = this.feed.openStream(
      this.feed.liveStart(),
      { kind: 'all', prefix: this.feed.dbPrefix },
      false,
    );
    this.#stream = stream;
    void this.#run(stream, markReady);
  }

  async #run(stream: ReopeningChangeStream, markReady: () => void): Promise<void> {
    try {
      while (!stream.closed) {
        const change = await stream.tryNext();
        if (stream.closed) break;
        if (change) this.feed.dispatch(change);
        const position = stream.position;
        if (position !== null) {
          this.#published = position;
          this.feed.ring.advance(position);
        }
        this.feed.sourceReads();
        markReady();
      }
    } catch (error) {
      if (this.#stream === stream) {
        // history_lost: the shared stream's own position is gone (an outage longer than the
        // oplog window), nobody can be told what they missed; unavailable: it cannot read.
        const reason: ChangeFeedEnd = error instanceof FeedEndError ? error.reason : 'history_lost';
        if (reason === 'unavailable') this.feed.sourceFailed(stream.lastError ?? error);
        this.feed.endAll(reason);
      }
    } finally {
      markReady();
    }
  }
}
