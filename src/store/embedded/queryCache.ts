/**
 * Answers to list pages and counts on the embedded store, kept per collection until the
 * collection is next written. A count or a page over an index costs SQLite 10–25 µs and the
 * answer's assembly more; read-heavy collections (a catalogue, a dashboard's counters) ask the
 * same questions again and again between writes.
 *
 * Never stale, for the reason the document cache is not (documentCache.ts): the embedded store
 * is the only writer of its documents, and every document write passes through one method
 * (`EmbeddedDocuments.#apply`), which drops the collection's answers before it writes, in the
 * same synchronous step as the group's commit. A query and the caching of its answer are one
 * synchronous step too, so no write lands between them. A group that fails has only dropped.
 *
 * An answer is keyed by what the query asks (countKey, pageKey: the filter as filterText spells
 * it, which tells any two filters apart, and the sort, position and window), not by the SQL
 * that computes it: the same question over the same rows has the same answer whatever index
 * or form the compiler picks, and a hit then costs no compiling.
 *
 * Bounded by an approximate byte budget (`FOLIO_EMBEDDED_QUERY_CACHE_MB`): past it, the oldest
 * answers of the least recently used collection of a data scope holding at least the average
 * go first, so one tenant asking many questions pushes out its own answers (cacheParts.ts); an
 * answer larger than an eighth of the budget is never kept. Each scope's collections are ordered
 * as the document cache orders documents: a hit moves its collection to the newest end only
 * from the older half of the order.
 */
import { OldestFirstMap } from '../../oldestFirstMap.js';
import type { FindQuery, StoredFilter } from '../port.js';
import { type Ordered, RecentlyUsedCache } from './cacheParts.js';
import { filterText, valueText } from './compileQuery.js';

/** The default budget (`FOLIO_EMBEDDED_QUERY_CACHE_MB`, 16). */
export const DEFAULT_QUERY_CACHE_BYTES = 16 * 1024 * 1024;

/** Per answer beyond its key and texts: the Map slot, the objects, the array (approximate). */
const ANSWER_OVERHEAD_BYTES = 160;

/** A count, or a page's documents as API text. */
export type QueryAnswer = number | readonly string[];

interface Kept {
  answer: QueryAnswer;
  bytes: number;
}

interface Bucket extends Ordered<Bucket> {
  /** By key, and oldest first (no capacity of its own: the cache's budget bounds it). */
  readonly answers: OldestFirstMap<Kept>;
  bytes: number;
}

/**
 * The least recently used collection's oldest answers out first, of a data scope holding at
 * least the average (cacheParts.ts).
 */
export class QueryAnswerCache extends RecentlyUsedCache<Bucket> {
  get(scopeKey: string, collection: string, key: string): QueryAnswer | undefined {
    const bucket = this.entries.get(bucketName(scopeKey, collection));
    const kept = bucket?.answers.get(key);
    if (bucket === undefined || kept === undefined) return this.miss();
    this.hit(bucket);
    return kept.answer;
  }

  set(scopeKey: string, collection: string, key: string, answer: QueryAnswer): void {
    const bytes = sizeOf(key, answer);
    if (bytes > this.maxEntryBytes) return;
    const name = bucketName(scopeKey, collection);
    let bucket = this.entries.get(name);
    if (bucket === undefined) {
      bucket = {
        key: name,
        answers: new OldestFirstMap(Number.POSITIVE_INFINITY),
        bytes: 0,
        moved: 0,
        share: this.shareOf(scopeKey),
        older: null,
        newer: null,
      };
      this.add(bucket);
    }
    const old = bucket.answers.get(key);
    if (old !== undefined) {
      // Replaced below (and moved to the newest end); not #forget: the bucket stays.
      bucket.bytes -= old.bytes;
      this.charge(bucket.share, -old.bytes);
    }
    bucket.answers.set(key, { answer, bytes });
    bucket.bytes += bytes;
    this.charge(bucket.share, bytes);
    this.#evict();
  }

  /** The collection's documents are about to be written: its answers no longer hold. */
  written(scopeKey: string, collection: string): void {
    if (this.entries.size === 0) return;
    const bucket = this.entries.get(bucketName(scopeKey, collection));
    if (bucket === undefined) return;
    this.unlink(bucket);
    this.charge(bucket.share, -bucket.bytes);
  }

  /** The victim's oldest collection first, its oldest answers first, until the budget holds. */
  #evict(): void {
    while (this.over) {
      const oldest = this.victim()?.order.oldest;
      const answer = oldest?.answers.oldest;
      if (!oldest || !answer) return;
      this.#forget(oldest, answer.key, answer.value);
    }
  }

  /** Takes one answer out of `bucket`, and the bucket out of the cache with its last answer. */
  #forget(bucket: Bucket, key: string, kept: Kept): void {
    bucket.answers.delete(key);
    bucket.bytes -= kept.bytes;
    // Unlinked before its last bytes go back: a share with no entries and no bytes ends.
    if (bucket.answers.size === 0) this.unlink(bucket);
    this.charge(bucket.share, -kept.bytes);
  }
}

/** The key of a count's answer: `upTo` bounds it (`total=estimate`), so it is part of the question. */
export function countKey(filter: StoredFilter, upTo: number | undefined): string {
  return `c${upTo ?? ''}\u0000${filterText(filter)}`;
}

/** The key of a page's answer (findJson): the filter, the sort, the cursor position, the window. */
export function pageKey(query: Omit<FindQuery, 'projection'>): string {
  let key = `p${query.skip}\u0000${query.limit}\u0000`;
  for (const [path, direction] of query.sort) key += `${JSON.stringify(path)}${direction},`;
  key += `\u0000${query.after === undefined ? 'u' : valueText(query.after)}\u0000`;
  return key + filterText(query.filter);
}

function bucketName(scopeKey: string, collection: string): string {
  return `${scopeKey}\u0000${collection}`;
}

/** UTF-16 code units count as bytes: V8 keeps ASCII text one byte a character. */
export function sizeOf(key: string, answer: QueryAnswer): number {
  let bytes = ANSWER_OVERHEAD_BYTES + key.length;
  if (typeof answer !== 'number') for (const text of answer) bytes += text.length + 16;
  return bytes;
}
