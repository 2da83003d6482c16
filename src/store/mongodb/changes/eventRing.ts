/**
 * The recent past of the shared change stream, in memory: every event it published (and every
 * drop that ended subscriptions), bounded in bytes (`mongodb.changeRingBytes`). A subscription
 * resuming after a token the ring still covers reads its missed events from here instead of
 * opening its own change stream on the cluster; only older tokens need a catch-up stream
 * (`mongodb.maxCatchUpStreams` at a time, catchUpLimiter.ts). After a deploy, clients that
 * reconnect within seconds are all served here.
 *
 * Coverage: the ring holds every event after `coveredFrom` up to `coveredTo` (the shared
 * stream's published position). Evicting the oldest entry moves `coveredFrom` to its token.
 * A restart of the shared stream (a gap) clears it.
 */
import type { ChangeEvent } from '../../port.js';

/** One entry: an event published under `key`, or a drop that ended the keys `ends` selects. */
export type RingEntry =
  | { token: string; key: string; event: ChangeEvent; bytes: number }
  | { token: string; ends: (key: string) => boolean; bytes: number };

/** Bytes counted for an entry besides its document (token, names, timestamps, bookkeeping). */
const ENTRY_OVERHEAD = 256;

/**
 * About the memory an event holds: its document's JSON length plus a fixed overhead. Measured
 * once per event (not per subscriber); exact enough for a bound.
 */
export function eventBytes(event: ChangeEvent): number {
  return JSON.stringify(event.document).length + event.token.length + ENTRY_OVERHEAD;
}

export type ResumeSource = 'ring' | 'catch_up';

/**
 * Where a resume after `after` reads its missed events: from the ring when the ring covers that
 * position (`coveredFrom <= after <= coveredTo`), else from a catch-up stream on the cluster. A
 * token beyond `coveredTo` (another instance ahead of this one, or a forged token) goes to the
 * cluster too, which checks it.
 */
export function resumeSource(
  after: string,
  coveredFrom: string | null,
  coveredTo: string | null,
  compare: (a: string, b: string) => number,
): ResumeSource {
  if (coveredFrom === null || coveredTo === null) return 'catch_up';
  return compare(after, coveredFrom) >= 0 && compare(after, coveredTo) <= 0 ? 'ring' : 'catch_up';
}

export class EventRing {
  #entries: RingEntry[] = [];
  #head = 0;
  #bytes = 0;
  #coveredFrom: string | null = null;
  #coveredTo: string | null = null;

  constructor(
    private readonly maxBytes: number,
    private readonly compare: (a: string, b: string) => number,
  ) {}

  get coveredFrom(): string | null {
    return this.#coveredFrom;
  }

  get coveredTo(): string | null {
    return this.#coveredTo;
  }

  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.length - this.#head;
  }

  /** Forget everything (the shared stream restarted: what came before may have a gap). */
  clear(): void {
    this.#entries = [];
    this.#head = 0;
    this.#bytes = 0;
    this.#coveredFrom = null;
    this.#coveredTo = null;
  }

  /** Record an entry the shared stream just published (tokens increase). */
  push(entry: RingEntry): void {
    if (this.maxBytes <= 0) return;
    this.#entries.push(entry);
    this.#bytes += entry.bytes;
    while (this.#bytes > this.maxBytes && this.size > 0) this.#evict();
  }

  /** The shared stream has published everything up to `position`. */
  advance(position: string): void {
    if (this.maxBytes <= 0) return;
    this.#coveredFrom ??= position;
    this.#coveredTo = position;
  }

  covers(after: string): boolean {
    return resumeSource(after, this.#coveredFrom, this.#coveredTo, this.compare) === 'ring';
  }

  /**
   * Up to `max` entries after `after` that concern `key` (null: every event; drops only concern
   * a key), in order, and how far that read got: the last entry's token when `max` stopped it,
   * else `coveredTo`. Null when the ring no longer covers `after`.
   */
  read(
    after: string,
    key: string | null,
    max: number,
  ): { entries: RingEntry[]; scannedTo: string | null } | null {
    if (!this.covers(after)) return null;
    const entries: RingEntry[] = [];
    for (let i = this.#firstAfter(after); i < this.#entries.length; i++) {
      const entry = this.#entries[i]!;
      const wanted = 'event' in entry ? key === null || entry.key === key : key !== null && entry.ends(key);
      if (!wanted) continue;
      entries.push(entry);
      if (entries.length >= max) return { entries, scannedTo: entry.token };
    }
    return { entries, scannedTo: this.#coveredTo };
  }

  /** Index of the first entry whose token is after `after` (binary search: tokens increase). */
  #firstAfter(after: string): number {
    let low = this.#head;
    let high = this.#entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.compare(this.#entries[mid]!.token, after) <= 0) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  #evict(): void {
    const oldest = this.#entries[this.#head]!;
    this.#entries[this.#head] = undefined as unknown as RingEntry;
    this.#head += 1;
    this.#bytes -= oldest.bytes;
    // Everything after the evicted entry is still here.
    this.#coveredFrom = oldest.token;
    if (this.#head > 1024 && this.#head * 2 > this.#entries.length) {
      this.#entries = this.#entries.slice(this.#head);
      this.#head = 0;
    }
  }
}
