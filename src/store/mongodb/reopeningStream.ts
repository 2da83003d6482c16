/**
 * One MongoDB change stream that survives outages: transient failures (network errors,
 * elections, a cursor lost on failover) reopen it from its last position with backoff
 * (`streamErrors.ts`), so its reader never sees them. The driver already resumes once by itself
 * after a resumable error on an established cursor; this covers the rest (a failed reopen, an
 * outage longer than server selection, a failure before the first batch). An event the server
 * cannot send (over 16 MB, BSONObjectTooLarge) is stepped over: a probe stream that projects
 * the large fields away reads that event's token, and the stream reopens after it (reported to
 * `onSkip`). On MongoDB 6.0.9+ the pipeline splits such events instead
 * (`$changeStreamSplitLargeEvent`), and the fragments are joined back here. A resume point that
 * is gone or refused, or an error that reopening cannot clear, ends it with FeedEndError.
 *
 * The failing batch may hold ordinary events before the oversized one, and the stream's
 * position is only where the last delivered batch ended: so the first BSONObjectTooLarge
 * reopens at that position one event per batch, delivering those events until the failure
 * comes again with nothing between the position and the oversized event. Only then does the
 * probe read the next event's token, which is that event's.
 *
 * Reads use `tryNext()`, which returns null after an empty batch: `position` then holds the
 * server's post-batch resume token, so readers learn how far the stream has scanned even while
 * nothing matches.
 */
import type { ChangeStream, ChangeStreamDocument, ResumeToken, Timestamp } from 'mongodb';
import { FeedEndError } from '../changeFeed/subscription.js';
import type { StoredDocument } from '../storedForm.js';
import { type FragmentJoin, joinFragment, tokenFromString, tokenString } from './changeEvents.js';
import { classifyStreamError, reopenDelayMs, type StreamFailure } from './streamErrors.js';

export type Change = ChangeStreamDocument<StoredDocument>;
export type DriverStream = ChangeStream<StoredDocument, Change>;

/** Where a stream starts: after a token, at a cluster time, or (empty) at the server's present. */
export interface StreamStart {
  startAfter?: ResumeToken;
  startAtOperationTime?: Timestamp;
}

export interface ReopeningOptions {
  /** Opens the driver stream from `start` (`batchSize` 1 while closing in on an oversized event). */
  open(start: StreamStart, tuning?: { batchSize: number }): DriverStream;
  /** Where the first stream starts. */
  start: StreamStart;
  /** `start` holds a token a client gave (see FailureContext). */
  clientToken: boolean;
  /** Told of each transient failure before the pause. */
  onRetry?: ((error: unknown, delayMs: number) => void) | undefined;
  /**
   * Opens the same stream with the large fields projected away, from `start`, to read the token
   * of an event too large to send. Without it such an event ends the stream (`unavailable`).
   */
  openProbe?: ((start: StreamStart) => DriverStream) | undefined;
  /** Told of each event stepped over (or a split event that could not be joined). */
  onSkip?: ((skipped: SkippedEvent) => void) | undefined;
  /** Told of each split event joined again. */
  onJoined?: (() => void) | undefined;
}

/** What is known of an event the stream stepped over. */
export interface SkippedEvent {
  token: string;
  operationType: string;
  /** `db.collection`, when the event has one. */
  namespace: string | null;
  documentId: string | null;
  why: 'too_large' | 'incomplete_split';
}

/** Probe reads before giving up on finding the oversized event (each one batch). */
const PROBE_READS = 5;

/** The port's end reason for a failure that ends a stream. */
export function endReasonOf(failure: Exclude<StreamFailure, 'retry' | 'skip_event'>) {
  return failure === 'fatal' ? 'unavailable' : failure;
}

function describeSkipped(change: Change, why: SkippedEvent['why']): SkippedEvent | null {
  const token = tokenString(change._id);
  if (token === null) return null;
  const ns = (change as { ns?: { db?: unknown; coll?: unknown } }).ns;
  const key = (change as { documentKey?: { _id?: unknown } }).documentKey;
  return {
    token,
    operationType: String(change.operationType),
    namespace: ns && typeof ns.db === 'string' ? `${ns.db}.${String(ns.coll ?? '')}` : null,
    documentId: key && key._id !== undefined ? String(key._id) : null,
    why,
  };
}

export class ReopeningChangeStream {
  #stream: DriverStream | null = null;
  #position: string | null;
  #established = false;
  #attempt = 0;
  #closed = false;
  #pause: { timer: NodeJS.Timeout; resolve: () => void } | null = null;
  #closing: Promise<void> | null = null;
  /** Fragments of a split event read so far, and the position before its first one. */
  #split: FragmentJoin | null = null;
  /** The failure that ended the stream, for the owner's log and readiness. */
  lastError: unknown = null;
  /** Reading one event per batch to find where an oversized event is (see above). */
  #closingIn = false;

  constructor(private readonly options: ReopeningOptions) {
    this.#position = options.start.startAfter ? tokenString(options.start.startAfter) : null;
  }

  /** Everything up to here has been read (null until the first batch of a "from now" stream). */
  get position(): string | null {
    this.#remember();
    // Half-way through a split event: nothing of it has been handed out yet.
    return this.#split ? this.#split.before : this.#position;
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
      let change: Change | null;
      try {
        change = await stream.tryNext();
        this.#established = true;
        this.#attempt = 0;
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
        if (failure === 'skip_event') {
          if (!this.#closingIn) {
            this.#closingIn = true;
            continue;
          }
          if (await this.#skipOversized()) {
            this.#closingIn = false;
            continue;
          }
        }
        if (failure !== 'retry' && failure !== 'skip_event') {
          this.lastError = error;
          throw new FeedEndError(endReasonOf(failure));
        }
        this.#attempt += 1;
        const delayMs = reopenDelayMs(this.#attempt);
        this.options.onRetry?.(error, delayMs);
        await this.#sleep(delayMs);
        continue;
      }
      if (!change) {
        // Caught up one event at a time without meeting the failure again: back to full batches.
        if (this.#closingIn) await this.#endClosingIn(stream);
        return null;
      }
      const joined = joinFragment(this.#split, change, this.#position);
      if (joined.kind === 'whole') {
        this.#split = null;
        return change;
      }
      if (joined.kind === 'partial') {
        this.#split = joined.join;
        continue;
      }
      this.#split = null;
      if (joined.kind === 'joined') {
        this.options.onJoined?.();
        return joined.change;
      }
      // A split event whose first fragments were never read (resumed half-way): step over it.
      const skipped = describeSkipped(change, 'incomplete_split');
      if (skipped) this.options.onSkip?.(skipped);
    }
    return null;
  }

  async #endClosingIn(stream: DriverStream): Promise<void> {
    this.#closingIn = false;
    this.#remember();
    this.#stream = null;
    await stream.close().catch(() => {});
  }

  /**
   * Read the token of the event at the position through a probe that leaves the large fields
   * out, and move the position past it. False when the probe found nothing (retry later).
   */
  async #skipOversized(): Promise<boolean> {
    const openProbe = this.options.openProbe;
    if (!openProbe) return false;
    const probe = openProbe(this.#startPoint());
    try {
      for (let read = 0; read < PROBE_READS && !this.#closed; read++) {
        const change = await probe.tryNext();
        if (!change) continue;
        const skipped = describeSkipped(change, 'too_large');
        if (!skipped) return false;
        this.#position = skipped.token;
        this.#split = null;
        this.options.onSkip?.(skipped);
        return true;
      }
      return false;
    } catch {
      return false;
    } finally {
      await probe.close().catch(() => {});
    }
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
    this.#stream ??= this.options.open(this.#startPoint(), this.#closingIn ? { batchSize: 1 } : undefined);
    return this.#stream;
  }

  #startPoint(): StreamStart {
    return this.#position !== null ? { startAfter: tokenFromString(this.#position) } : this.options.start;
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
