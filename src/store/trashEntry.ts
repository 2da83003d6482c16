/** A trash entry as both stores answer it (TrashRepository.list and get). */
import type { FolioDocument, TrashEntry, TrashStamp } from './port.js';

/**
 * The entry of `id` from what a store keeps: only the stamp's own fields are copied, so what a
 * store keeps beside them (its version column, MongoDB's TTL date) never reaches a reader.
 */
export function trashEntryOf(id: string, stamp: TrashStamp, document: FolioDocument): TrashEntry {
  return {
    id,
    deletedAt: stamp.deletedAt,
    apiKeyHint: stamp.apiKeyHint,
    expiresAt: stamp.expiresAt,
    document,
  };
}
