/**
 * `GET /{ns}/{collection}/_stream` parameters: `events=created,updated,deleted,removed`, the listing's
 * `filter[...]` language (same validation and limits), and the `Last-Event-ID` header. Anything
 * else is refused, so a typo never silently widens a stream.
 */
import { z } from 'zod';
import { invalidQuery } from '../../errors.js';
import { isFilterParam, parseFilterParams, type RawQuery, singleValue } from '../../query/filterParams.js';
import type { ChangeType, StoredFilter } from '../../store/port.js';

/**
 * What a stream may send: the store's change types, and `removed`, an update that took a
 * document out of a key's rule (its id only; eventStream.ts).
 */
export type StreamEventType = ChangeType | 'removed';

export const CHANGE_TYPES: readonly StreamEventType[] = ['created', 'updated', 'deleted', 'removed'];

export interface StreamQuery {
  types: ReadonlySet<StreamEventType>;
  /** A MongoDB filter over the stored form, matched in memory against each event's document. */
  filter: StoredFilter;
  filterCount: number;
}

/** The `events` parameter as OpenAPI describes it; parseTypes reads it. */
export const streamEventsParamSchema = z
  .string()
  .regex(new RegExp(`^(?:${CHANGE_TYPES.join('|')})(?:,(?:${CHANGE_TYPES.join('|')}))*$`))
  .optional()
  .meta({ description: `Comma-separated event types to receive: ${CHANGE_TYPES.join(', ')}; default all.` });

export function parseStreamQuery(query: RawQuery): StreamQuery {
  let types: ReadonlySet<StreamEventType> = new Set(CHANGE_TYPES);
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || isFilterParam(key)) continue;
    if (key !== 'events') throw invalidQuery(key, 'unknown parameter; expected events or filter[...]');
    types = parseTypes(singleValue(key, value));
  }
  const { filter, filterCount } = parseFilterParams(query);
  return { types, filter, filterCount };
}

function parseTypes(raw: string): Set<StreamEventType> {
  const types = new Set<StreamEventType>();
  for (const item of raw.split(',')) {
    const type = CHANGE_TYPES.find((t) => t === item.trim());
    if (!type) throw invalidQuery('events', `expected a comma-separated list of ${CHANGE_TYPES.join(', ')}`);
    types.add(type);
  }
  return types;
}
