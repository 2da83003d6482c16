/**
 * The API text of documents read lately, for reads by id on the embedded store. The statement
 * that builds it from the stored JSONB was about 11 % of a GET's CPU in a profile under load
 * (about 17 µs), against about 1 µs for a hit. Whole `npm run bench` runs are too noisy to
 * show it alone (GET at 2.18 and 2.41 × raw better-sqlite3's CPU without it, 2.62 and 1.93
 * with it, spreads of 20–150 %; the floor is 2); an A/B of the server's CPU per GET gave 107 µs
 * without it and 99 µs with it.
 *
 * Never stale: the embedded store is the only writer of its documents (the data directory's
 * lock keeps a second server out), every document write passes through
 * `EmbeddedDocuments.#apply`, which evicts the documents it writes before writing them, and a
 * read and the caching of what it read are one synchronous step, so no write lands between them.
 */
import type { LRUCache } from 'lru-cache';
import { byteBudgetCache } from '../database/byteBudgetCache.js';

/** The default budget (`FOLIO_EMBEDDED_DOCUMENT_CACHE_MB`, 32). */
export const DEFAULT_DOCUMENT_CACHE_BYTES = 32 * 1024 * 1024;

/** Per entry beyond its key and text: the cache's slot (approximate). */
const ENTRY_OVERHEAD_BYTES = 96;

export class DocumentTextCache {
  /** Null with a budget of 0: nothing is kept. */
  readonly #texts: LRUCache<string, string> | null;

  constructor(maxBytes: number) {
    this.#texts = byteBudgetCache<string>(
      maxBytes,
      (text, key) => 2 * (key.length + text.length) + ENTRY_OVERHEAD_BYTES,
    );
  }

  /** The document's text: kept, else `read` (null: no such document), then kept. */
  text(scopeKey: string, collection: string, id: string, read: () => string | null): string | null {
    const key = keyOf(scopeKey, collection, id);
    const known = this.#texts?.get(key);
    if (known !== undefined) return known;
    const text = read();
    if (text !== null) this.#texts?.set(key, text);
    return text;
  }

  /** Before a write of the document: the next read goes to the database. */
  evict(scopeKey: string, collection: string, id: string): void {
    this.#texts?.delete(keyOf(scopeKey, collection, id));
  }
}

function keyOf(scopeKey: string, collection: string, id: string): string {
  return `${scopeKey}\u0000${collection}\u0000${id}`;
}
