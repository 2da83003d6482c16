/**
 * The query of a plain paged list (`limit`, `after`) such as a collection's trash or its schema
 * violations: unknown names, a limit out of 1..maxLimit and an `after` that is not one string
 * are 400 `invalid_query`, naming the parameter. `after` is returned as given; what it means is
 * the list's own business.
 */
import { AppError, invalidQuery } from '../errors.js';

export const DEFAULT_PAGE_LIMIT = 20;

export function parsePageQuery(
  query: Record<string, unknown>,
  maxLimit: number,
): { limit: number; after: string | undefined } {
  for (const name of Object.keys(query)) {
    if (name !== 'limit' && name !== 'after') {
      const shown = name.slice(0, 100);
      throw new AppError(400, 'invalid_query', `Unknown query parameter: ${shown}.`, { param: shown });
    }
  }
  let limit = DEFAULT_PAGE_LIMIT;
  const raw = query.limit;
  if (raw !== undefined) {
    // At most six digits before Number(): a long run of digits is refused, not rounded.
    if (typeof raw !== 'string' || !/^[1-9]\d{0,5}$/.test(raw) || Number(raw) > maxLimit) {
      throw invalidQuery('limit', `must be an integer from 1 to ${maxLimit}`);
    }
    limit = Number(raw);
  }
  const after = query.after;
  if (after !== undefined && (typeof after !== 'string' || after === '')) {
    throw invalidQuery('after', 'must be the `next` of the previous page');
  }
  return { limit, after };
}
