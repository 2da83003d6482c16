/** Prefixed, time-ordered identifiers (`doc_01J...`): sortable, so default order is creation order. */
import { monotonicFactory } from 'ulid';

export type IdPrefix = 'doc' | 'key' | 'wh' | 'evt' | 'dlv' | 'acc' | 'prj' | 'req';

// Monotonic: ids made in the same millisecond still sort in creation order.
const nextUlid = monotonicFactory();

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}

/** ISO 8601 UTC with milliseconds; fixed width, so string order is time order. */
export function isoNow(ms: number = Date.now()): string {
  return new Date(ms).toISOString();
}
