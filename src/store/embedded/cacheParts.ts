/**
 * What the embedded store's caches (documentCache.ts, queryCache.ts) share: an order of use per
 * tenant (an OrderList, src/orderList.ts), a byte budget split fairly among tenants, and their
 * counts.
 */
import { type Linked, OrderList } from '../../orderList.js';

/** One tenant's part of a cache (a data scope): its entries, oldest first, and its bytes. */
export interface Share<V extends Linked<V>> {
  readonly owner: string;
  readonly order: OrderList<V>;
  bytes: number;
  /** Moves to the newest end so far: an entry with `moved` ≥ this − n has at most n after it. */
  moves: number;
}

/** An entry of a RecentlyUsedCache. */
export interface Ordered<V extends Ordered<V>> extends Linked<V> {
  /** Its key in the cache. */
  readonly key: string;
  /** When the entry last moved to the newest end of its share: the share's count of moves then. */
  moved: number;
  readonly share: Share<V>;
}

/**
 * A byte budget over entries, each owned by a tenant, kept in order of use per tenant, nearly:
 * a hit moves its entry to the newest end of its tenant's order only when the entry is in the
 * older half of that order (an entry in the newer half is far from eviction, and a hit then
 * writes nothing). Entries are measured approximately, in bytes; none larger than an eighth of
 * the budget is kept (so one entry never empties most of the cache).
 *
 * Past the budget, the oldest entries go of a tenant holding at least the average of the
 * tenants' bytes (the heaviest, nearly: see `victim`), never of one holding less. One tenant
 * alone has the whole budget; under contention, a tenant that keeps within an even share of it
 * keeps all it has whatever the others ask, so one flooding the cache with reads of its own
 * evicts its own entries, not another tenant's.
 */
export abstract class RecentlyUsedCache<V extends Ordered<V>> {
  /** Every entry, by key; each is also in its share's order. */
  protected readonly entries = new Map<string, V>();
  protected readonly maxBytes: number;
  protected readonly maxEntryBytes: number;
  /** Approximate bytes held (the sum of the shares' bytes). */
  protected held = 0;
  readonly #shares = new Map<string, Share<V>>();
  /** The share that last grew past the one named before: the heaviest, unless since shrunk. */
  #heaviest: Share<V> | null = null;
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

  /** Approximate bytes held for `owner`. */
  bytesOf(owner: string): number {
    return this.#shares.get(owner)?.bytes ?? 0;
  }

  get hits(): number {
    return this.#hits;
  }

  get misses(): number {
    return this.#misses;
  }

  /** `owner`'s share, made if it has none. */
  protected shareOf(owner: string): Share<V> {
    let share = this.#shares.get(owner);
    if (share === undefined) {
      share = { owner, order: new OrderList(), bytes: 0, moves: 0 };
      this.#shares.set(owner, share);
    }
    return share;
  }

  /** Puts `value`, not in the cache, in it, at the newest end of its share. */
  protected add(value: V): void {
    this.entries.set(value.key, value);
    this.#toNewest(value);
  }

  /** Takes `value`, in the cache, out; its bytes are the caller's to `charge` back. */
  protected unlink(value: V): void {
    this.entries.delete(value.key);
    value.share.order.remove(value);
  }

  /** Adds `bytes` (negative: removes) to the held count and `share`'s. */
  protected charge(share: Share<V>, bytes: number): void {
    this.held += bytes;
    share.bytes += bytes;
    if (bytes > 0 && (this.#heaviest === null || share.bytes > this.#heaviest.bytes)) this.#heaviest = share;
    if (share.order.size === 0 && share.bytes <= 0) {
      this.#shares.delete(share.owner);
      if (this.#heaviest === share) this.#heaviest = null;
    }
  }

  /**
   * The share to evict from: one holding at least the average. The share last seen growing
   * past the heaviest usually is; when it has shrunk below the average since (its documents
   * written, its collections dropped), the shares are counted again for the heaviest.
   */
  protected victim(): Share<V> | undefined {
    const named = this.#heaviest;
    if (named !== null && named.bytes * this.#shares.size >= this.held) return named;
    let heaviest: Share<V> | undefined;
    for (const share of this.#shares.values())
      if (!heaviest || share.bytes > heaviest.bytes) heaviest = share;
    this.#heaviest = heaviest ?? null;
    return heaviest;
  }

  /** Counts a hit on `value`: to the newest end of its share if it is in the older half. */
  protected hit(value: V): void {
    this.#hits += 1;
    const share = value.share;
    if (share.moves - value.moved >= share.order.size / 2) {
      share.order.remove(value);
      this.#toNewest(value);
    }
  }

  protected miss(): undefined {
    this.#misses += 1;
    return undefined;
  }

  protected get over(): boolean {
    return this.held > this.maxBytes;
  }

  #toNewest(value: V): void {
    const share = value.share;
    share.moves += 1;
    value.moved = share.moves;
    share.order.push(value);
  }
}
