/** The embedded store's read caches (documents/textCache.ts, query/answerCache.ts): lru-cache by bytes. */
import { LRUCache } from 'lru-cache';

/**
 * An LRU cache holding at most `maxBytes` as `sizeOf` counts them, or null with a budget of 0:
 * nothing is kept. One entry never empties most of the cache (at most an eighth of it).
 */
export function byteBudgetCache<V extends {}>(
  maxBytes: number,
  sizeOf: (value: V, key: string) => number,
): LRUCache<string, V> | null {
  if (maxBytes <= 0) return null;
  return new LRUCache<string, V>({
    maxSize: maxBytes,
    maxEntrySize: Math.max(1, Math.floor(maxBytes / 8)),
    sizeCalculation: sizeOf,
  });
}
