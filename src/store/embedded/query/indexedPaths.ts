/** The paths a query names, for the array probe of its indexed ones. */
import type { FindQuery, JsonValue, StoredFilter } from '../../port.js';

/** Every field name the filter uses, under `$and`, `$or` and `$nor` too (explicit stack). */
function pathsNamed(filter: StoredFilter): Set<string> {
  const found = new Set<string>();
  const stack: JsonValue[] = [filter];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === '$and' || key === '$or' || key === '$nor') stack.push(value);
      else if (!key.startsWith('$')) found.add(key);
    }
  }
  return found;
}

/**
 * The paths `filter` and `sort` name that are in `indexed`: the ones worth an array probe
 * (`EmbeddedIndexes.arrayFree`). Walks `$and`/`$or`/`$nor` with an explicit stack.
 */
export function indexedPathsOf(
  filter: StoredFilter,
  sort: FindQuery['sort'],
  indexed: ReadonlySet<string>,
): Set<string> {
  const found = new Set<string>();
  if (indexed.size === 0) return found;
  for (const [path] of sort) if (indexed.has(path)) found.add(path);
  for (const path of pathsNamed(filter)) if (indexed.has(path)) found.add(path);
  return found;
}
