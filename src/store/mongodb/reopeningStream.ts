/**
 * One MongoDB change stream that survives outages: transient failures (network errors,
 * elections, a cursor lost on failover) reopen it from its last position with backoff
 * (`streamErrors.ts`), so its reader never sees them. The driver already resumes once by itself
 * after a resumable error on an established cursor; this covers the rest (a failed reopen, an
 * outage longer than server selection, a failure before the first batch). Only a resume point
 * that is gone or refused ends it, with FeedEndError.
 *
 * Reads use `tryNext()`, which returns null after an empty batch: `position` then holds the
 * server's post-batch resume token, so readers learn how far the stream has scanned even while
 * nothing matches.
 */
import type { ChangeStream, ChangeStreamDocument, ResumeToken, Timestamp } from 'mongodb';
import { FeedEndError } from '../changeFeed/subscription.js';
import type { StoredDocument } from '../storedForm.js';
import { tokenFromString, tokenString } from './changeEvents.js';
import { classifyStreamError, reopenDelayMs } from './streamErrors.js';

export type Change = ChangeStreamDocument<StoredDocument>;
export type DriverStream = ChangeStream<StoredDocument, Change>;

/** Where a stream starts: after a token, at a cluster time, or (empty) at the server's present. */
export interface StreamStart {
  startAfter?: ResumeToken;
  startAtOperationTime?: Timestamp;
}

export interface ReopeningOptions {
  /** Opens the driver stream from `start`. */
  open(start: StreamStart): DriverStream;
  /** Where the first stream starts. */
  start: StreamStart;
  /** `start` holds a token a client gave (see FailureContext). */
  clientToken: boolean;
  /** Told of each transient failure before the pause. */
  onRetry?: ((error: unknown, delayMs: number) => void) | undefined;
}

export class ReopeningChangeStream {
  #stream: DriverStream | null = null;
  #position: string | null;
  #established = false;
  #attempt = 0;
  #closed = false;
  #pause: { timer: NodeJS.Timeout; resolve: () => void } | null = null;
  #closing: Promise<void> | null = null;

  constructor(private readonly options: ReopeningOptions) {
    this.#position = options.start.startAfter ? tokenString(options.start.startAfter) : null;
  }

  /** Everything up to here has been read (null until the first batch of a "from now" stream). */
  get position(): string | null {
    this.#remember();
    return this.#position;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Changes the driver holds already (no round trip to read them). */
  bufferedCount(): number {
    return this.#stream?.bufferedCount() ?? 0;
  }

  /**
   * The next change, or null after an empty batch (or once closed). Transient failures are
   * retried here; a lost or refused resume point throws FeedEndError.
   */
  async tryNext(): Promise<Change | null> {
    while (!this.#closed) {
      const stream = this.#current();
      try {
        const change = await stream.tryNext();
        this.#established = true;
        this.#attempt = 0;
        return change;
      } catch (error) {
        if (this.#closed) return null;
        const failure = classifyStreamError(error, {
          clientToken: this.options.clientToken,
          established: this.#established,
        });
        // Reopen from the last position the failed stream reached.
        this.#remember();
        this.#stream = null;
        await stream.close().catch(() => {});
        if (failure !== 'retry') throw new FeedEndError(failure);
        this.#attempt += 1;
        const delayMs = reopenDelayMs(this.#attempt);
        this.options.onRetry?.(error, delayMs);
        await this.#sleep(delayMs);
      }
    }
    return null;
  }

  /** Close the stream (idempotent); a pending `tryNext` resolves null. */
  close(): Promise<void> {
    this.#closed = true;
    if (this.#pause) {
      clearTimeout(this.#pause.timer);
      this.#pause.resolve();
      this.#pause = null;
    }
    const stream = this.#stream;
    this.#closing ??= stream ? stream.close().catch(() => {}) : Promise.resolve();
    return this.#closing;
  }

  #current(): DriverStream {
    if (!this.#stream) {
      const start: StreamStart =
        this.#position !== null ? { startAfter: tokenFromString(this.#position) } : this.options.start;
      this.#stream = this.options.open(start);
    }
    return this.#stream;
  }

  #remember(): void {
    const current = this.#stream ? tokenString(this.#stream.resumeToken) : null;
    if (current !== null) this.#position = current;
  }

  #sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#pause = null;
        resolve();
      }, ms);
      this.#pause = { timer, resolve };
    });
  }
}
