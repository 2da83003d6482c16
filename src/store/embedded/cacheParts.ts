/**
 * What the embedded store's caches (documentCache.ts, queryCache.ts) share: an order of use, a
 * byte budget and their counts.
 */

/** An entry of a RecentlyUsedCache. */
export interface Ordered {
  /** When the entry last moved to the newest end: the count of moves so far then. */
  moved: number;
}

/**
 * A Map whose insertion order is recency of use, nearly: the oldest entry comes first, to be
 * evicted first. A hit moves its entry to the newest end only when the entry is in the older
 * half of the order: moving is a delete and an insert, most of a hit's cost, and an entry in
 * the newer half is far from eviction (it is evicted only after passing through the whole older
 * half unread). Entries are measured approximately, in bytes, against a budget; none larger
 * than an eighth of the budget is kept (so one entry never empties most of the cache).
 */
export abstract class RecentlyUsedCache<V extends Ordered> {
  /** Oldest first. */
  protected readonly entries = new Map<string, V>();
  protected readonly maxBytes: number;
  protected readonly maxEntryBytes: number;
  /** Approximate bytes held; the subclass adds and removes its entries' sizes. */
  protected held = 0;
  /** Moves to the newest end so far: an entry with `moved` ≥ this − n has at most n after it. */
  #moves = 0;
  #hits = 0;
  #misses = 0;

  /** `maxBytes` 0 keeps nothing. */
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
    this.maxEntryBytes = Math.floor(maxBytes / 8);
  }

  /** Approximate bytes held. */
  get bytes(): number {
    return this.held;
  }

  get hits(): number {
    return this.#hits;
  }

  get misses(): number {
    return this.#misses;
  }

  /** Puts `value` at the newest end (replacing any entry of `key`). */
  protected add(key: string, value: V): void {
    this.entries.delete(key);
    this.#moves += 1;
    value.moved = this.#moves;
    this.entries.set(key, value);
  }

  /** Counts a hit on `value`, the entry of `key`: to the newest end if it is in the older half. */
  protected hit(key: string, value: V): void {
    this.#hits += 1;
    if (this.#moves - value.moved >= this.entries.size / 2) this.add(key, value);
  }

  protected miss(): undefined {
    this.#misses += 1;
    return undefined;
  }

  protected get over(): boolean {
    return this.held > this.maxBytes;
  }
}
