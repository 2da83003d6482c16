/**
 * The API text of recently read or written documents, for reads by id on the embedded store.
 * Rendering that text from the stored JSONB and handing it to V8 is the largest single cost of a
 * GET after the socket itself. The embedded store is the only writer of its documents (the data
 * directory's lock keeps a second server out; operator commands write accounts and keys only),
 * and every write goes through one place that evicts the documents it writes before its commit
 * and, for a single-document commit, puts their new text back once the group has committed, so
 * an entry is never stale. Bounded by an approximate byte budget, least recently used out first
 * (nearly) of a data scope holding at least the average, so one tenant reading widely does not
 * push out another's documents (cacheParts.ts); a document larger than an eighth of the budget
 * is never kept.
 */
import type { DocumentJson } from '../port.js';
import { type Ordered, RecentlyUsedCache } from './cacheParts.js';

/** The default budget (`FOLIO_EMBEDDED_DOCUMENT_CACHE_MB`, 32). */
export const DEFAULT_DOCUMENT_CACHE_BYTES = 32 * 1024 * 1024;

/** Per entry beyond its text: the key, the Map slot and the objects (approximate). */
const ENTRY_OVERHEAD_BYTES = 128;

interface Slot extends Ordered<Slot> {
  entry: DocumentJson;
}

/**
 * Least recently used out first (nearly: a hit moves its entry only from the older half), of a
 * data scope holding at least the average (cacheParts.ts).
 */
export class DocumentJsonCache extends RecentlyUsedCache<Slot> {
  get(scopeKey: string, collection: string, id: string): DocumentJson | undefined {
    const slot = this.entries.get(entryKey(scopeKey, collection, id));
    if (slot === undefined) return this.miss();
    this.hit(slot);
    return slot.entry;
  }

  set(scopeKey: string, collection: string, id: string, entry: DocumentJson): void {
    const size = sizeOf(entry);
    if (size > this.maxEntryBytes) return;
    const key = entryKey(scopeKey, collection, id);
    this.#remove(key);
    const slot: Slot = { key, entry, moved: 0, share: this.shareOf(scopeKey), older: null, newer: null };
    this.add(slot);
    this.charge(slot.share, size);
    while (this.over) {
      const oldest = this.victim()?.order.oldest;
      if (!oldest) break;
      this.#drop(oldest);
    }
  }

  /** Forget a document: called for every document a write touches, before its commit. */
  evict(scopeKey: string, collection: string, id: string): void {
    this.#remove(entryKey(scopeKey, collection, id));
  }

  get size(): number {
    return this.entries.size;
  }

  #remove(key: string): void {
    const old = this.entries.get(key);
    if (old !== undefined) this.#drop(old);
  }

  #drop(slot: Slot): void {
    this.unlink(slot);
    this.charge(slot.share, -sizeOf(slot.entry));
  }
}

/** UTF-16 text, two bytes a unit, plus the entry's overhead. */
export function sizeOf(entry: DocumentJson): number {
  return entry.json.length * 2 + ENTRY_OVERHEAD_BYTES;
}

/** Length-prefixed parts: no choice of scope, collection and id can collide with another. */
function entryKey(scopeKey: string, collection: string, id: string): string {
  return `${scopeKey.length}:${scopeKey}${collection.length}:${collection}${id}`;
}
