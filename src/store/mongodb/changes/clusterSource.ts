/**
 * The MongoDB change feed's shared live stream (changes.ts): one per process, opened after a
 * growing pause when reopening could not clear a failure, publishing every change it reads to
 * the feed and its ring, and ending every subscription when it cannot go on.
 */
import type { ChangeSource } from '../../changeFeed/fanOut.js';
import { FeedEndError } from '../../changeFeed/subscription.js';
import type { ChangeFeedEnd } from '../../port.js';
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

/**
 * How the shared stream's end ends its subscriptions, and the failure to report (null: none).
 * history_lost: its own position is gone (an outage longer than the oplog window), nobody can be
 * told what they missed; unavailable: it cannot read, the feed is failed and tries again. Any
 * other error (a change it could not publish, a bug) is a failure too, never lost history: that
 * would send the webhook dispatcher on from now, past events it never delivered.
 */
export function sourceEnd(
  error: unknown,
  lastError: unknown,
): { reason: ChangeFeedEnd; failure: unknown | null } {
  if (!(error instanceof FeedEndError)) return { reason: 'unavailable', failure: error };
  if (error.reason !== 'unavailable') return { reason: error.reason, failure: null };
  return { reason: 'unavailable', failure: lastError ?? error };
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
        const end = sourceEnd(error, stream.lastError);
        if (end.failure !== null) this.feed.sourceFailed(end.failure);
        this.feed.endAll(end.reason);
      }
    } finally {
      markReady();
    }
  }
}
