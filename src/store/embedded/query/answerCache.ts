/**
 * Answers to list pages and counts on the embedded store, kept until their collection is next
 * written. Reading a page's rows costs SQLite its sort keys again per row (folio_sort_key), and
 * read-heavy collections (a catalogue, a dashboard's counters) ask the same questions again and
 * again between writes: without these answers the bench's filtered list cost 2.6–3.1 × raw
 * better-sqlite3's CPU per request and its count 2.0–2.3 ×, against a floor of 2.
 *
 * Never stale: the embedded store is the only writer of its documents (the data directory's
 * lock keeps a second server out), and every document write passes through one method
 * (`EmbeddedDocuments.#apply`), which calls `written` before it writes, in the same synchronous
 * step as the group's commit. A query and the caching of its answer are one synchronous step
 * too, so no write lands between them. A collection's write count is part of every key of its
 * answers, so a write makes the older ones unreachable; lru-cache drops them as they age.
 */
import type { LRUCache } from 'lru-cache';
import { byteBudgetCache } from '../database/byteBudgetCache.js';

/** The default budget (`FOLIO_EMBEDDED_QUERY_CACHE_MB`, 16). */
export const DEFAULT_QUERY_CACHE_BYTES = 16 * 1024 * 1024;

/** A count, or a page's documents as API text. */
export type Answer = number | readonly string[];

/** Per answer beyond its key and texts: the cache's slot, the array (approximate). */
const ANSWER_OVERHEAD_BYTES = 160;

export class AnswerCache {
  /** Null with a budget of 0: nothing is kept. */
  readonly #answers: LRUCache<string, Answer> | null;
  #writes = 0;
  /** `#writes` at each collection's last write in this process (absent: none yet). */
  readonly #writtenAt = new Map<string, number>();

  constructor(maxBytes: number) {
    this.#answers = byteBudgetCache<Answer>(maxBytes, (answer, key) => sizeOf(key, answer));
  }

  /** Answers held (tests). */
  get size(): number {
    return this.#answers?.size ?? 0;
  }

  /** The key of `question` (`questionText`) about the collection's documents as they are now. */
  key(scopeKey: string, collection: string, question: string): string {
    const collectionKey = `${scopeKey}\u0000${collection}`;
    return `${collectionKey}\u0000${this.#writtenAt.get(collectionKey) ?? 0}\u0000${question}`;
  }

  get(key: string): Answer | undefined {
    return this.#answers?.get(key);
  }

  set(key: string, answer: Answer): void {
    this.#answers?.set(key, answer);
  }

  /** The collection's documents are about to be written: its answers no longer hold. */
  written(scopeKey: string, collection: string): void {
    if (this.#answers) this.#writtenAt.set(`${scopeKey}\u0000${collection}`, ++this.#writes);
  }
}

/** UTF-16 code units count as bytes: V8 keeps ASCII text one byte a character. */
function sizeOf(key: string, answer: Answer): number {
  let bytes = ANSWER_OVERHEAD_BYTES + key.length;
  if (typeof answer !== 'number') for (const text of answer) bytes += text.length + 16;
  return bytes;
}

/**
 * A query's parts as text that tells any two apart: each value is tagged with its type (`5` and
 * `"5"` differ) and what JSON would lose is spelled out (`-0`, `Infinity`, `NaN`, an undefined
 * member). Members in `Object.entries` order, the order the compiler reads them in. Recursive:
 * a query is as deep as the parser builds it (a few levels), never a client's nesting.
 */
export function questionText(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return `s${JSON.stringify(value)}`;
    case 'number':
      return `n${Object.is(value, -0) ? '-0' : String(value)}`;
    case 'boolean':
      return value ? 't' : 'f';
    case 'undefined':
      return 'u';
    case 'object': {
      if (value === null) return 'z';
      if (Array.isArray(value)) return `[${value.map(questionText).join(',')}]`;
      let text = '{';
      for (const [key, member] of Object.entries(value))
        text += `${JSON.stringify(key)}:${questionText(member)},`;
      return `${text}}`;
    }
    default:
      // Not JSON (the compiler refuses it, so no answer is ever kept under this text).
      return 'x';
  }
}
