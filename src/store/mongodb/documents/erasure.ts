/**
 * Erasure (a delete with `erase`: purge, or a plan without trash) on MongoDB, as pure values.
 * The embedded store's change log keeps only an erased document's `_id` and metadata, its
 * `deleted` event included; MongoDB builds a delete event from the pre-image, the document just
 * before the delete. So the commit's transaction first reduces the document to its `_id` and
 * metadata, marked `_folio.erased`, then deletes it: the delete's pre-image is that stub, and
 * the stub's own update event is not one of Folio's (classifyChange skips it). What MongoDB
 * itself still holds afterwards (the oplog, `config.system.preimages`) is in docs/mongodb.md.
 */
import type { AnyBulkWriteOperation, ChangeStreamDocument } from 'mongodb';
import type { JsonObject } from '../../port.js';
import type { StoredDocument } from '../../storedForm.js';

/** The marker's name under `_folio` (a reserved field no user document holds). */
const ERASED = 'erased';

/** Reduces the document at `expectedVersion` to its `_id` and `_folio`, marked erased. */
export function erasingUpdate(id: string, expectedVersion: number): AnyBulkWriteOperation<StoredDocument> {
  return {
    updateOne: {
      filter: { _id: id, '_folio.version': expectedVersion },
      update: [
        {
          $replaceWith: {
            _id: '$_id',
            _folio: { $mergeObjects: ['$_folio', { $literal: { [ERASED]: true } }] },
          },
        },
      ],
    },
  };
}

function isMarked(image: unknown): boolean {
  const folio = (image as { _folio?: unknown } | null | undefined)?._folio;
  return typeof folio === 'object' && folio !== null && (folio as Record<string, unknown>)[ERASED] === true;
}

/**
 * Whether a change is the update `erasingUpdate` makes. The server records it as a delta
 * (`update`, with `_folio.erased` among the updated fields; the post-image may be missing) or as
 * a replacement (`replace`, whose document is the stub).
 */
export function isErasingChange(change: ChangeStreamDocument<StoredDocument>): boolean {
  if (change.operationType === 'replace') return isMarked(change.fullDocument);
  if (change.operationType !== 'update') return false;
  if (isMarked(change.fullDocument)) return true;
  const updated = (change.updateDescription?.updatedFields ?? {}) as Record<string, unknown>;
  return updated[`_folio.${ERASED}`] === true || isMarked(updated);
}

/**
 * The document an event carries, from its image: an erased document's `_id` and metadata only
 * (the embedded store's change log keeps exactly these), anything else as it is.
 */
export function erasedOrWhole(image: StoredDocument): JsonObject {
  if (!isMarked(image)) return image;
  const { version, createdAt, updatedAt } = image._folio;
  return { _id: image._id, _folio: { version, createdAt, updatedAt } };
}
