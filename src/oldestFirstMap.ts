/**
 * A map of at most `capacity` entries that, when full, gives up the entry set longest ago: for
 * the bounded maps a client can fill (API keys, sign-in emails and addresses, compiled schemas,
 * prepared statements). Setting a key, held or not, puts it at the newest end, so a cache that
 * sets again what it uses evicts the least recently used, and one that sets only what it lacks
 * evicts the first in.
 *
 * Why not a Map's insertion order, taking `keys().next()` when full: V8 leaves a deleted entry's
 * slot in its hash table until the table is rebuilt, and an iteration from the front steps over
 * every such slot, so evicting the oldest of a full Map again and again costs in proportion to
 * what was deleted before. Inserting into the API-key cache full at 10,000 entries, after
 * 100,000 evictions, cost 6.5–9.9 µs a key that way and 0.5–1.5 µs with this map; the sign-in
 * throttle's counter (which also drops ended windows from the front) 11.7–15.8 µs a new address
 * against 0.2–0.9 µs (Node 20.20, a micro-benchmark). Here the order is a list linked through the
 * entries (orderList.ts), so set, delete and eviction are O(1) whatever was deleted before.
 */
import { type Linked, OrderList } from './orderList.js';

/** What `oldest` shows of an entry. */
export interface HeldEntry<V> {
  readonly key: string;
  readonly value: V;
}

interface Entry<V> extends Linked<Entry<V>> {
  readonly key: string;
  value: V;
}

export class OldestFirstMap<V> {
  /** Keys are Map keys, never properties, so any string is safe as one. */
  readonly #entries = new Map<string, Entry<V>>();
  readonly #order = new OrderList<Entry<V>>();

  /** `capacity` 0 keeps nothing. */
  constructor(readonly capacity: number) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The entry set longest ago: the next to go. */
  get oldest(): HeldEntry<V> | undefined {
    return this.#order.oldest ?? undefined;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key)?.value;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** Puts `value` under `key` at the newest end; past capacity, the oldest entry goes. */
  set(key: string, value: V): void {
    const held = this.#entries.get(key);
    if (held) {
      held.value = value;
      this.#order.remove(held);
      this.#order.push(held);
      return;
    }
    const entry: Entry<V> = { key, value, older: null, newer: null };
    this.#entries.set(key, entry);
    this.#order.push(entry);
    while (this.#entries.size > this.capacity) this.#unlink(this.#order.oldest as Entry<V>);
  }

  delete(key: string): boolean {
    const entry = this.#entries.get(key);
    if (!entry) return false;
    this.#unlink(entry);
    return true;
  }

  /**
   * Deletes every entry `doomed` says to, oldest first; `doomed` must not change the map. (A
   * method rather than an iterator, so no deletion during the walk cuts the links it follows.)
   */
  deleteWhere(doomed: (value: V, key: string) => boolean): void {
    for (let entry = this.#order.oldest; entry; ) {
      const next = entry.newer;
      if (doomed(entry.value, entry.key)) this.#unlink(entry);
      entry = next;
    }
  }

  #unlink(entry: Entry<V>): void {
    this.#entries.delete(entry.key);
    this.#order.remove(entry);
  }
}
