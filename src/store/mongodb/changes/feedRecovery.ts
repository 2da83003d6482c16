/**
 * A failed change feed tries again on its own. A failure (an error reopening cannot clear, such
 * as Unauthorized during a credential rotation) ends every subscription and marks the instance
 * not ready; the shared stream only opens again when something subscribes, and a standby
 * instance (no SSE client, no dispatcher lease) never subscribes. So after each failure, once
 * the pause of `restartDelayMs` has passed, and while no shared stream runs, a stream of the same
 * pipeline opens only to learn whether the feed reads again: its first batch clears the
 * failure (the instance is ready again), a new failure pauses longer (1 s doubling to 60 s).
 */
import { FeedEndError } from '../../changeFeed/subscription.js';
import type { StreamTarget } from './changeEvents.js';
import type { ReopeningChangeStream, StreamStart } from './reopeningStream.js';

/** What the recovery asks of its feed (MongoChangeFeed). */
export interface RecoveringFeed {
  readonly dbPrefix: string;
  /** Shared streams running or opening (0 or 1): they clear or report the failure themselves. */
  readonly sourceCount: number;
  readonly failure: string | null;
  liveStart(): StreamStart;
  openStream(start: StreamStart, target: StreamTarget, clientToken: boolean): ReopeningChangeStream;
  sourceFailed(error: unknown): void;
  sourceReads(): void;
}

/** How often a failed feed checks again while a shared stream runs (it may stop before reading). */
const RECHECK_MS = 1_000;

/**
 * What a scheduled attempt does: open its stream; check again later (a shared stream runs and
 * will clear or report the failure itself, unless its subscribers leave before it reads); or
 * nothing (closed, or no longer failed).
 */
export function recoveryStep(state: {
  closed: boolean;
  failed: boolean;
  sourceRunning: boolean;
}): 'open' | 'later' | 'none' {
  if (state.closed || !state.failed) return 'none';
  return state.sourceRunning ? 'later' : 'open';
}

export class FeedRecovery {
  #timer: NodeJS.Timeout | null = null;
  #stream: ReopeningChangeStream | null = null;
  #closed = false;

  constructor(private readonly feed: RecoveringFeed) {}

  /** Try again after `delayMs` (replacing an attempt scheduled before). */
  schedule(delayMs: number): void {
    if (this.#closed) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      void this.#attempt();
    }, delayMs);
    this.#timer.unref();
  }

  close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const stream = this.#stream;
    this.#stream = null;
    return stream ? stream.close() : Promise.resolve();
  }

  async #attempt(): Promise<void> {
    const feed = this.feed;
    const state = {
      closed: this.#closed,
      failed: feed.failure !== null,
      sourceRunning: feed.sourceCount > 0,
    };
    const step = recoveryStep(state);
    if (step === 'later') this.schedule(RECHECK_MS);
    if (step !== 'open' || this.#stream) return;
    const stream = feed.openStream(feed.liveStart(), { kind: 'all', prefix: feed.dbPrefix }, false);
    this.#stream = stream;
    try {
      // Transient failures are retried inside; this returns once a batch was read.
      await stream.tryNext();
      if (!stream.closed) feed.sourceReads();
    } catch (error) {
      if (!this.#closed)
        feed.sourceFailed(error instanceof FeedEndError ? (stream.lastError ?? error) : error);
    } finally {
      if (this.#stream === stream) this.#stream = null;
      await stream.close();
    }
  }
}
