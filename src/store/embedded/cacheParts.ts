/**
 * What the embedded store's caches (documentCache.ts, queryCache.ts) share: an order of use and
 * a byte budget.
 */

/** An entry of a RecencyOrder. */
export interface Ordered {
  /** When the entry last moved to the newest end: the count of moves so far then. */
  moved: number;
}

/**
 * A Map whose insertion order is recency of use, nearly: the oldest entry comes first, to be
 * evicted first. A hit moves its entry to the newest end only when the entry is in the older
 * half of the order: moving is a delete and an insert, most of a hit's cost, and an entry in
 * the newer half is far from eviction (it is evicted only after passing through the whole older
 * half unread).
 */
export class RecencyOrder<V extends Ordered> {
  /** Oldest first. */
  readonly entries = new Map<string, V>();
  /** Moves to the newest end so far: an entry with `moved` ≥ this − n has at most n after it. */
  #moves = 0;

  /** Puts `value` at the newest end (replacing any entry of `key`). */
  add(key: string, value: V): void {
    this.entries.delete(key);
    this.#moves += 1;
    value.moved = this.#moves;
    this.entries.set(key, value);
  }

  /** A hit on `value`, the entry of `key`: to the newest end if it is in the older half. */
  used(key: string, value: V): void {
    if (this.#moves - value.moved >= this.entries.size / 2) this.add(key, value);
  }
}

/**
 * A cache's byte budget and its counts: the caches measure their entries approximately, in
 * bytes, and never keep one larger than an eighth of the budget (so one entry never empties
 * most of the cache).
 */
export class CacheBudget {
  readonly maxBytes: number;
  readonly maxEntryBytes: number;
  /** Approximate bytes held. */
  bytes = 0;
  hits = 0;
  misses = 0;

  /** `maxBytes` 0 keeps nothing. */
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
    this.maxEntryBytes = Math.floor(maxBytes / 8);
  }

  get over(): boolean {
    return this.bytes > this.maxBytes;
  }
}
