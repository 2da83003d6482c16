/**
 * Hands a resumed subscription over from its private catch-up stream to the shared stream of
 * its collection without a gap or a duplicate.
 *
 * A subscription resuming after token T joins the collection's shared stream at once (buffering
 * what it carries) and opens a private stream `startAfter: T`. Both streams carry the same
 * events in the same order, and the same event has the same resume token on both (the token is
 * derived from the oplog entry, not from the cursor). The private stream is delivered until the
 * two meet on a common event; from then on the shared stream is delivered and the private one
 * closes:
 *
 * - the private stream yields an event already in the buffer: deliver the buffer from that
 *   event on (buffered events before it are at or before T: the subscriber has them);
 * - the shared stream carries the event the private stream delivered last: switch at once (what
 *   it buffered before is at or before T, or was delivered privately already);
 * - otherwise the shared event is buffered. If the shared stream is behind, the buffer briefly
 *   holds events already delivered; they are dropped when it reaches the last one.
 *
 * Whichever stream sees an event second triggers the switch, so the private stream lives only
 * until the shared one has caught up with it (at the latest, the collection's next write). If
 * they have not met after `limit` buffered events (a catch-up longer than that), the
 * subscription stays on its private stream for good rather than hold an unbounded buffer.
 */
import type { ChangeEvent } from '../port.js';

export class ResumeMerge {
  #pending: ChangeEvent[] = [];
  #lastPrivate: string | null = null;
  #state: 'catching-up' | 'shared' | 'private-only' = 'catching-up';

  constructor(readonly limit = 10_000) {}

  /** `shared`: deliver the shared stream only; `private-only`: deliver the private stream only. */
  get state(): 'catching-up' | 'shared' | 'private-only' {
    return this.#state;
  }

  /** An event from the shared stream; returns what to deliver now. */
  fromShared(event: ChangeEvent): ChangeEvent[] {
    if (this.#state === 'shared') return [event];
    if (this.#state === 'private-only') return [];
    if (event.token === this.#lastPrivate) {
      this.#switchToShared();
      return [];
    }
    this.#pending.push(event);
    if (this.#pending.length > this.limit) this.#stayPrivate();
    return [];
  }

  /** An event from the private stream; returns what to deliver now. */
  fromPrivate(event: ChangeEvent): ChangeEvent[] {
    if (this.#state === 'shared') return [];
    if (this.#state === 'private-only') return [event];
    const at = this.#pending.findIndex((p) => p.token === event.token);
    if (at >= 0) {
      const rest = this.#pending.slice(at);
      this.#switchToShared();
      return rest;
    }
    this.#lastPrivate = event.token;
    return [event];
  }

  #switchToShared(): void {
    this.#state = 'shared';
    this.#release();
  }

  #stayPrivate(): void {
    this.#state = 'private-only';
    this.#release();
  }

  #release(): void {
    this.#pending = [];
    this.#lastPrivate = null;
  }
}
