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
