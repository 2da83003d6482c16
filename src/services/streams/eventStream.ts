/**
 * One open SSE stream: reads its change subscription, keeps the events the client asked for,
 * and writes them to the socket. What a client has not read yet is bounded in BYTES
 * (`streams.bufferBytes`, counted on the response: Node's own buffer plus the socket's): a
 * client over it is closed with a final event saying why (`overflow`), and resumes with its
 * Last-Event-ID like after any cut. It never slows anyone else, since the fan-out only appends
 * to each subscriber's own queue, and no live event waits for a slow socket: they are taken from
 * the subscription as they come, so its queue (bounded in events, `streams.bufferLimit`) stays
 * empty and a document is held by at most the sockets that still owe it. A replay (the catch-up
 * after Last-Event-ID) is the exception: it is in the store, so it is written only as the
 * client takes it (the socket drains), and a client that stops reading then is closed at the
 * next heartbeat that finds it has taken nothing.
 *
 * The hot path holds no promise, iterator step or copy per subscriber and event: the fan-out
 * queues an event and calls the stream back (`onQueued`), which marks itself due; once the
 * task that committed the write is over (so the writer's own response goes out first, never
 * behind a thousand streams), every due stream writes what it holds, the frame being one Buffer
 * shared by every stream of the project.
 *
 * Under a key's document rule (`rule`, ruleView.ts) a stream sends only events whose document
 * is inside it, and `document.removed` (the id alone) for an update that took out of it a
 * document the client could see.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { matchesFilter } from '../../query/documentMatcher.js';
import type { ChangeEvent, ChangeFeedEnd, ChangeSubscription, StoredFilter } from '../../store/port.js';
import { type StoredDocument, toStored } from '../../store/storedForm.js';
import type { ScopeEventIds } from './eventIds.js';
import type { StreamRule } from './ruleView.js';
import {
  checkpointFrame,
  controlFrame,
  documentFrame,
  HEARTBEAT_FRAME,
  RESET_EVENT_ID,
  removedFrame,
  retryFrame,
  startIdFrame,
} from './sseFrames.js';
import type { StreamEventType } from './streamRequest.js';

/** Why Folio closed a stream (besides the feed ending it). */
export type CloseReason =
  | 'client_closed'
  | 'shutdown'
  | 'key_revoked'
  | 'rules_changed'
  | 'session_ended'
  | 'plan_changed'
  | 'slot_lost'
  | 'unavailable';

/**
 * What a stream reports to whoever opened it: one object shared by all their streams, so a
 * stream holds no callbacks of its own (each closure an idle stream keeps is memory).
 */
export interface StreamOwner<H> {
  /** At every heartbeat (the slot lease); resolving false closes the stream. */
  heartbeat(stream: EventStream<H>): Promise<boolean>;
  /** Once, when the stream is over for any reason (it sends nothing more). */
  closed(stream: EventStream<H>): void;
  /** Once, after `closed`, when its connection is gone too (it holds nothing more). */
  released(stream: EventStream<H>): void;
  /**
   * A checkpoint was sent: the client last got `from` (an event's token, or its Last-Event-ID;
   * null when it has none) and every event up to `to` was skipped by the stream's filters.
   */
  checkpointed(stream: EventStream<H>, from: string | null, to: string): void;
}

export interface EventStreamOptions<H> {
  owner: StreamOwner<H>;
  /** The owner's data about this stream (its key, its slot). */
  holder: H;
  subscription: ChangeSubscription;
  /** The project name, as in the URL. */
  project: string;
  types: ReadonlySet<StreamEventType>;
  filter: StoredFilter;
  /** The key's document rule in this collection, or null when it sees every document. */
  rule?: StreamRule | null;
  /** The shared heartbeat schedule (one timer for every stream); it calls `heartbeat()`. */
  heartbeats: { add(stream: EventStream<H>): void; delete(stream: EventStream<H>): void };
  retryMs: number;
  /** Most events the subscription may queue (within one turn of the event loop, as they are taken at once). */
  bufferLimit: number;
  /** Most bytes written and not yet taken by the client before it is closed as too slow. */
  bufferBytes: number;
  /** The tenant's event ids. */
  ids: ScopeEventIds;
  /** An id to set at once (the resume point of a stream opened from now), or null. */
  startId: string | null;
  /** The token the stream resumes after (its Last-Event-ID), or null. */
  after: string | null;
}

type Verdict = 'send' | 'skip' | 'removed' | 'ask';

const CLOSE_MESSAGES: Record<Exclude<CloseReason, 'client_closed'>, string> = {
  shutdown: 'The server is shutting down; reconnect with Last-Event-ID to resume.',
  key_revoked: 'The API key was revoked or rotated.',
  rules_changed:
    'The API key’s rules changed; reconnect with Last-Event-ID to resume under the new rules, and re-read the collection: what the key may see changed.',
  session_ended: 'The dashboard session ended (logged out or expired).',
  plan_changed: 'Change streams are no longer part of this account’s plan.',
  slot_lost: 'This stream lost its slot among the key’s concurrent streams.',
  unavailable:
    'The change feed failed on this server (it reports not ready); reconnect with Last-Event-ID, ideally to another instance, to resume.',
};

/** The stored form of the event last matched: the filtered streams of one event share it. */
const lastStored: { event: ChangeEvent | null; stored: StoredDocument | null } = {
  event: null,
  stored: null,
};

function storedFormOf(event: ChangeEvent): StoredDocument {
  if (lastStored.event !== event || !lastStored.stored) {
    lastStored.event = event;
    lastStored.stored = toStored(event.document);
  }
  return lastStored.stored;
}

/** Longest wait for a closing stream's final bytes to reach a client before the socket is cut. */
const FORCE_CLOSE_MS = 5000;

export class EventStream<H = unknown> {
  /** The HTTP response the frames go to (set by `start`). */
  #body: Writable | null = null;
  #closed = false;
  /** The last event skipped by the type or field filter since the last id the client got. */
  #skipped: string | null = null;
  /** The token of the last event written (or the resume point it started after). */
  #lastSent: string | null;
  /** A replay waits for the client to take what it was sent ('drain') before it goes on. */
  #waiting = false;
  /** Unsent bytes at the last heartbeat while the replay waited (to tell a client that stopped). */
  #waitingLength: number | null = null;
  /** A `removed` look-up is in flight: nothing more is written until it is settled. */
  #lookingUp = false;
  readonly #filtered: boolean;

  constructor(private readonly options: EventStreamOptions<H>) {
    this.#filtered = Object.keys(options.filter).length > 0;
    this.#lastSent = options.after;
  }

  get holder(): H {
    return this.options.holder;
  }

  get closed(): boolean {
    return this.#closed;
  }

  private get body(): Writable {
    if (!this.#body) throw new Error('EventStream: start() first');
    return this.#body;
  }

  /** Write the stream to `body` (the HTTP response, headers set) until it closes. */
  start(body: Writable): void {
    if (this.#closed) {
      // Closed while it was being opened (its key revoked meanwhile): the client reconnects,
      // and is answered as its key now deserves.
      body.end();
      return;
    }
    this.#body = body;
    body.once('close', () => this.close('client_closed'));
    // A write to a connection that just broke reports an error; the close above handles it.
    body.on('error', () => this.close('client_closed'));
    if (body.destroyed || body.writableEnded) {
      // The client left while the subscription was being established.
      this.close('client_closed');
      return;
    }
    const { startId } = this.options;
    this.body.write(retryFrame(this.options.retryMs) + (startId === null ? '' : startIdFrame(startId)));
    this.options.heartbeats.add(this);
    this.options.subscription.onQueued(() => EventStream.#schedule(this));
    this.#flush();
  }

  /** Close with a final `stream.closed` event (none for a client that left). Idempotent. */
  close(reason: CloseReason): void {
    if (this.#closed) return;
    if (reason === 'client_closed' || !this.#body) {
      // Also before start(): a key revoked while its stream was being opened.
      this.#finish();
      this.#body?.destroy();
      return;
    }
    this.body.write(controlFrame('stream.closed', { reason, message: CLOSE_MESSAGES[reason] }));
    this.#finish();
  }

  /**
   * Resolves once the final bytes were handed on (or the client is gone), waiting at most
   * `maxMs`; a client still not reading by then is cut off.
   */
  async drained(maxMs: number): Promise<void> {
    if (!this.#body || this.body.writableFinished || this.body.destroyed) return;
    const done = new AbortController();
    const timer = setTimeout(() => done.abort(), maxMs);
    await Promise.race([
      once(this.body, 'finish', { signal: done.signal }),
      once(this.body, 'close', { signal: done.signal }),
    ]).catch(() => {});
    clearTimeout(timer);
    done.abort();
    if (!this.body.writableFinished) this.body.destroy();
  }

  /** Streams with events queued since the last flush; written together, after the current task. */
  static readonly #due = new Set<EventStream<unknown>>();

  static #schedule(stream: EventStream<unknown>): void {
    if (EventStream.#due.size === 0) setImmediate(EventStream.#flushDue);
    EventStream.#due.add(stream);
  }

  static #flushDue(): void {
    try {
      // A stream that gets more events while others are written is added again, and written too.
      for (const stream of EventStream.#due) {
        EventStream.#due.delete(stream);
        stream.#flush();
      }
    } finally {
      // Never strand the others behind one that threw.
      if (EventStream.#due.size > 0) setImmediate(EventStream.#flushDue);
    }
  }

  /**
   * Write what the subscription holds; close the stream once the client owes too many bytes.
   * A replay (the subscription catching up from history) is written only as the client takes
   * it: once the socket is full, the stream waits for it to drain and the subscription reads no
   * more history meanwhile, so a reader as fast as it can be is never cut off by the bound.
   */
  #flush(): void {
    if (this.#closed) return;
    const { subscription, project, ids, bufferBytes } = this.options;
    const body = this.body;
    while (!(this.#waiting && subscription.catchingUp)) {
      if (this.#lookingUp) return;
      const event = subscription.take();
      if (event === undefined) break;
      const verdict = this.#verdict(event);
      if (verdict === 'skip') {
        this.#skipped = event.token;
        continue;
      }
      if (verdict === 'ask') {
        this.#askRemoved(event);
        return;
      }
      const frame =
        verdict === 'removed' ? removedFrame(event, project, ids) : documentFrame(event, project, ids);
      if (!this.#write(body, frame, event.token, bufferBytes)) return;
    }
    // The feed ended it (close() already finished it otherwise).
    if (subscription.endedBy !== null) this.#endedBy(subscription.endedBy);
  }

  /** Write one event's frame; false once the stream closed for the bytes the client owes. */
  #write(body: Writable, frame: Buffer, token: string, bufferBytes: number): boolean {
    this.#skipped = null;
    this.#lastSent = token;
    const room = body.write(frame);
    if (body.writableLength > bufferBytes) {
      this.#endedBy('overflow');
      return false;
    }
    if (!room && this.options.subscription.catchingUp) this.#waitForClient(body);
    return true;
  }

  /**
   * An update out of the key's rule, of a document this stream has no memory of: the store says
   * whether the client could see it before (ruleView.ts). Events after it wait in the
   * subscription's queue meanwhile, so the order holds.
   */
  #askRemoved(event: ChangeEvent): void {
    const rule = this.options.rule;
    if (!rule) return;
    this.#lookingUp = true;
    // Never stuck behind a look-up: one that fails tells nothing, and nothing is sent.
    void rule
      .sawBefore(event)
      .catch(() => false)
      .then((saw) => {
        this.#lookingUp = false;
        if (this.#closed) return;
        const { project, ids, bufferBytes } = this.options;
        if (!saw) this.#skipped = event.token;
        else if (!this.#write(this.body, removedFrame(event, project, ids), event.token, bufferBytes)) return;
        EventStream.#schedule(this);
      });
  }

  #waitForClient(body: Writable): void {
    if (this.#waiting) return;
    this.#waiting = true;
    this.options.subscription.holdHistory(true);
    body.once('drain', () => {
      this.#waiting = false;
      this.#waitingLength = null;
      this.options.subscription.holdHistory(false);
      EventStream.#schedule(this);
    });
  }

  #verdict(event: ChangeEvent): Verdict {
    const { rule, types } = this.options;
    if (rule) {
      const judged = rule.judge(event, storedFormOf(event), types.has('removed'));
      if (judged !== 'inside') return judged;
    }
    if (!types.has(event.type)) return 'skip';
    return !this.#filtered || matchesFilter(storedFormOf(event), this.options.filter) ? 'send' : 'skip';
  }

  #endedBy(reason: ChangeFeedEnd | 'stalled' | null): void {
    switch (reason) {
      case 'overflow':
        this.body.write(
          controlFrame('stream.closed', {
            reason: 'overflow',
            message: `This client fell too far behind (more than ${this.options.bufferBytes} bytes unread, or ${this.options.bufferLimit} events); reconnect with Last-Event-ID to resume.`,
          }),
        );
        break;
      case 'stalled':
        this.body.write(
          controlFrame('stream.closed', {
            reason: 'overflow',
            message:
              'This client stopped reading while its missed events were replayed; reconnect with Last-Event-ID to resume.',
          }),
        );
        break;
      case 'history_lost':
      case 'invalidated':
      case 'invalid_token':
        this.body.write(
          controlFrame(
            'stream.reset',
            {
              reason:
                reason === 'history_lost' ? 'expired' : reason === 'invalidated' ? 'invalidated' : 'unknown',
              message: 'Events were lost for this stream: re-read the collection, then open a new stream.',
            },
            RESET_EVENT_ID,
          ),
        );
        break;
      case 'unavailable':
        // The store's shared change stream met an error that does not clear by itself (MongoDB:
        // a role change, say): resumable elsewhere, and this instance reports not ready.
        this.body.write(
          controlFrame('stream.closed', { reason: 'unavailable', message: CLOSE_MESSAGES.unavailable }),
        );
        break;
      default:
        // store_closed (the server is stopping), or null (never: a subscription ends with a reason).
        this.body.write(
          controlFrame('stream.closed', { reason: 'shutdown', message: CLOSE_MESSAGES.shutdown }),
        );
    }
    this.#finish();
  }

  /** Called by the shared heartbeat schedule every `streams.heartbeatMs`. */
  heartbeat(): void {
    void this.#heartbeat();
  }

  async #heartbeat(): Promise<void> {
    if (this.#closed) return;
    if (this.#stalled()) {
      this.#endedBy('stalled');
      return;
    }
    // Events skipped by the filters still move the client's resume point, so a reconnect after a
    // long quiet spell does not start from an id that has since expired.
    // On a quiet collection the store may offer its shared source's position instead (MongoDB:
    // the post-batch resume token), so the client's id never falls out of the store's history
    // while no event was lost.
    const skipped = this.#skipped ?? this.#quietPosition();
    this.#skipped = null;
    if (skipped) {
      this.body.write(checkpointFrame(this.options.ids.encode(skipped)));
      this.options.owner.checkpointed(this, this.#lastSent, skipped);
      this.#lastSent = skipped;
    } else {
      this.body.write(HEARTBEAT_FRAME);
    }
    if (!(await this.options.owner.heartbeat(this))) this.close('slot_lost');
  }

  /**
   * A replay waits on a client that took nothing since the last heartbeat: it stopped reading.
   * (A live stream's client is closed by the byte bound instead, as events come.)
   */
  #stalled(): boolean {
    if (!this.#waiting || !this.options.subscription.catchingUp) return false;
    const unsent = this.body.writableLength;
    const stalled = this.#waitingLength !== null && unsent >= this.#waitingLength;
    this.#waitingLength = unsent;
    return stalled;
  }

  #quietPosition(): string | null {
    const position = this.options.subscription.checkpoint?.() ?? null;
    return position !== null && position !== this.#lastSent ? position : null;
  }

  #finish(): void {
    this.#closed = true;
    this.options.heartbeats.delete(this);
    this.options.subscription.onQueued(null);
    this.options.subscription.close();
    this.options.owner.closed(this);
    const body = this.#body;
    if (!body || body.destroyed) {
      this.options.owner.released(this);
      return;
    }
    body.end();
    // A client that reads nothing never takes the final bytes: cut it off after a grace period.
    // Until then the stream keeps its slot among the key's streams, so what closed streams still
    // hold (at most streams.bufferBytes and one event each) stays within the per-key cap.
    const force = setTimeout(() => body.destroy(), FORCE_CLOSE_MS);
    force.unref();
    body.once('close', () => {
      clearTimeout(force);
      this.options.owner.released(this);
    });
  }
}
