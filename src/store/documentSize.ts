/**
 * How big a stored document may be, measured as MongoDB measures it: the BSON size of its stored
 * form (`storedForm.ts`). JSON size is a poor guide: BSON spends a type byte and the index as a
 * string on every array element, so an array of small numbers grows about six times. Both stores
 * honour the same limit (the services check it before any write), so a document accepted by one
 * store is accepted by the other and data can move between them.
 */
import { calculateObjectSize } from 'bson';
import type { FolioDocument } from './port.js';
import { toStored } from './storedForm.js';

/** MongoDB's limit on one BSON document, which is also the limit on one change event. */
export const MONGODB_MAX_BSON_BYTES = 16 * 1024 * 1024;

/** Room in a change event for everything besides the document images (ids, namespace, times, token). */
export const CHANGE_EVENT_OVERHEAD_BYTES = 64 * 1024;

/**
 * The largest limit the configuration accepts: the server builds a replace event with the
 * document twice (its post-image, and its pre-image, which the stream's own pipeline may drop
 * only afterwards), and an event over 16 MiB stops the change stream for everyone. The version
 * record (the document plus a few fields) stays under 16 MiB by the same margin.
 */
export const MAX_BSON_BYTES_CEILING = Math.floor((MONGODB_MAX_BSON_BYTES - CHANGE_EVENT_OVERHEAD_BYTES) / 2);

/** The BSON size of the document as stored (metadata under `_folio`). */
export function storedBsonSize(document: FolioDocument): number {
  return calculateObjectSize(toStored(document));
}

/**
 * An upper bound on `storedBsonSize` of a document whose `JSON.stringify` takes `jsonBytes`
 * bytes (UTF-8), so a document far below the limit need not be measured again as BSON.
 *
 * Why it holds: BSON never spends more than JSON on a string, an object key, `true`, `false`
 * or `null`. It spends more on small values: an array element costs a type byte, its index as
 * a string and a terminating zero, and a small number or an empty string, object or array costs
 * 4 to 8 bytes, against 2 to 4 bytes of JSON with its comma. Indexes are below `jsonBytes`, so
 * have at most `digits(jsonBytes)` digits: the worst case, an array of one-digit numbers, grows
 * `(6 + digits) / 2` times. `4 + digits` times covers it and every nesting of empty containers;
 * the constant covers the top-level document and the metadata moved under `_folio`.
 */
export function storedBsonSizeBound(jsonBytes: number): number {
  const digits = String(Math.max(jsonBytes, 1)).length;
  return jsonBytes * (4 + digits) + 256;
}
