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
 * Any other server error on a stream that was reading (not a resume point refused) may be one
 * event's: an error evaluating its images, a field too large to split. It is closed in on the
 * same way; if the probe then reads the event at the position, the main stream's failure is that
 * event's, and it is stepped over with an error log rather than stopping every feed. If the probe
 * fails too (Unauthorized, a refused pipeline), the error ends the stream as before. A probe that
 * cannot find an oversized event is tried PROBE_ATTEMPTS times, then the stream ends.
 *
 * Reads use `tryNext()`, which returns null after an empty batch: `position` then holds the
 * server's post-batch resume token, so readers learn how far the stream has scanned even while
 * nothing matches.
 */
import type { ChangeStream, ChangeStreamDocument, ResumeToken, Timestamp } from 'mongodb';
import { FeedEndError } from '../../changeFeed/subscription.js';
import type { StoredDocument } from '../../storedForm.js';
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
  why: 'too_large' | 'incomplete_split' | 'unreadable';
  /** The server's error, for an event it could not send (`unreadable`). */
  error?: string;
}

/** Probe reads before giving up on finding the oversized event (each one batch). */
const PROBE_READS = 5;
/** Probes in a row that find no oversized event before the stream ends `unavailable`. */
export const PROBE_ATTEMPTS = 5;

/**
 * What a failed read leads to:
 * - `close_in`: reopen at the position one event per batch, at once (find the failing event);
 * - `probe`: the failure came again with nothing read in between: read that event's token with
 *   the probe and step over it;
 * - `retry`: pause, then reopen at the position;
 * - `end`: end the stream (`endReasonOf`).
 * A server error the classification calls fatal may be one event's when the stream was reading
 * (`established`): it is closed in on like an oversized event, and the probe decides. Not right
 * after stepping over such an event with nothing read since (`afterUnreadable`): two in a row
 * are the stream's failure, not its events' (stepping over every event would lose them all).
 */
export function failureStep(
  failure: StreamFailure,
  state: { closingIn: boolean; established: boolean; canProbe: boolean; afterUnreadable: boolean },
): 'close_in' | 'probe' | 'retry' | 'end' {
  if (failure === 'retry') return 'retry';
  const eventSized =
    failure === 'skip_event' || (failure === 'fatal' && state.established && !state.afterUnreadable);
  if (!eventSized || !state.canProbe) return 'end';
  return state.closingIn ? 'probe' : 'close_in';
}

/**
 * After a probe that did not step over the event: an oversized event (`skip_event`) is probed
 * again after a pause, at most PROBE_ATTEMPTS times in a row; any other error was not the
 * event's (the probe failed too, or found nothing), so it ends the stream.
 */
export function afterProbeMiss(failure: StreamFailure, misses: number): 'retry' | 'end' {
  return failure === 'skip_event' && misses < PROBE_ATTEMPTS ? 'retry' : 'end';
}

/** The port's end reason for a failure that ends a stream (any other: it cannot read). */
export function endReasonOf(failure: StreamFailure): 'unavailable' | 'history_lost' | 'invalid_token' {
  return failure === 'history_lost' || failure === 'invalid_token' ? failure : 'unavailable';
}

function describeSkipped(change: Change, why: SkippedEvent['why'], error?: unknown): SkippedEvent | null {
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
    ...(error === undefined ? {} : { error: error instanceof Error ? error.message : String(error) }),
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
  /** Probes in a row that did not step over the event (see PROBE_ATTEMPTS). */
  #probeMisses = 0;
  /** Where closing in started; then where it read nothing and the failure came back after. */
  #closingInFrom: string | null = null;
  #quietAt: string | null = null;
  /** The position right after an event stepped over as unreadable (see failureStep). */
  #unreadableAt: string | null = null;

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
        if (await this.#afterFailure(error, failure)) continue;
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

  /**
   * Acts on a failed read (failureStep): true to reopen at once, false to pause first; throws
   * FeedEndError when the stream ends.
   */
  async #afterFailure(error: unknown, failure: StreamFailure): Promise<boolean> {
    const step = failureStep(failure, {
      // Closing in read nothing from here, yet the failure came back: probe at once.
      closingIn: this.#closingIn || (this.#quietAt !== null && this.#quietAt === this.#position),
      established: this.#established,
      canProbe: this.options.openProbe !== undefined,
      afterUnreadable: this.#unreadableAt !== null && this.#unreadableAt === this.#position,
    });
    if (step === 'retry') return false;
    if (step === 'close_in') {
      this.#closingIn = true;
      this.#closingInFrom = this.#position;
      return true;
    }
    if (step === 'probe') {
      const why = failure === 'skip_event' ? 'too_large' : 'unreadable';
      if (await this.#skipFailing(why, error)) {
        this.#closingIn = false;
        this.#probeMisses = 0;
        this.#quietAt = null;
        this.#unreadableAt = why === 'unreadable' ? this.#position : null;
        return true;
      }
      this.#probeMisses += 1;
      if (afterProbeMiss(failure, this.#probeMisses) === 'retry') return false;
    }
    this.lastError =
      failure === 'skip_event' && this.#probeMisses > 0
        ? new Error(
            `an event over 16 MB could not be stepped over: ${this.#probeMisses} probes in a row did not read it (${(error as Error).message})`,
          )
        : error;
    throw new FeedEndError(endReasonOf(failure));
  }

  async #endClosingIn(stream: DriverStream): Promise<void> {
    this.#closingIn = false;
    this.#remember();
    this.#quietAt = this.#position === this.#closingInFrom ? this.#position : null;
    this.#probeMisses = 0;
    this.#stream = null;
    await stream.close().catch(() => {});
  }

  /**
   * Read the token of the event at the position through a probe that leaves the large fields
   * out, and move the position past it. False when the probe found nothing or failed.
   */
  async #skipFailing(why: 'too_large' | 'unreadable', error: unknown): Promise<boolean> {
    const openProbe = this.options.openProbe;
    if (!openProbe) return false;
    const probe = openProbe(this.#startPoint());
    try {
      for (let read = 0; read < PROBE_READS && !this.#closed; read++) {
        const change = await probe.tryNext();
        if (!change) continue;
        const skipped = describeSkipped(change, why, why === 'unreadable' ? error : undefined);
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
