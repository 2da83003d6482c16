/**
 * From MongoDB change-stream documents to the port's ChangeEvent, and from change-stream errors
 * to the reason a subscription ends. Pure, so it is unit-tested with sample documents.
 */
import {
  type ChangeStreamDocument,
  type ChangeStreamOptions,
  MongoServerError,
  type ResumeToken,
  type Timestamp,
} from 'mongodb';
import type { ChangeEvent, ChangeFeedEnd, ChangeType, JsonObject } from '../port.js';
import type { StoredDocument } from '../storedForm.js';
import { fromStored } from '../storedForm.js';
import { asTimestamp } from './clusterClock.js';

/**
 * Post-images for updates (our own writes are inserts and replacements, whose change events
 * always carry the new document; `required` also covers updates made by anyone else) and
 * pre-images for deletes. `required` makes the server fail rather than send an event without
 * the document: a missing image surfaces as an error, never as a half event.
 */
export const CHANGE_STREAM_OPTIONS = {
  fullDocument: 'required',
  fullDocumentBeforeChange: 'required',
} as const satisfies ChangeStreamOptions;

/** Server error codes that mean "the history to resume from is gone". */
export const HISTORY_LOST_CODES: ReadonlySet<number> = new Set([
  286, // ChangeStreamHistoryLost: the resume point fell off the oplog
  280, // ChangeStreamFatalError: the resume token's event was not found
  260, // InvalidResumeToken
  47, // NoMatchingDocument: a required pre- or post-image expired
]);

/** A change event whose document image is absent although the stream required it. */
export class MissingImageError extends Error {
  constructor(operationType: string) {
    super(`change stream ${operationType} event without its document image`);
    this.name = 'MissingImageError';
  }
}

/** A change whose resume token is not the `{_data: string}` form every MongoDB 6.0+ sends. */
export class UnexpectedTokenError extends Error {
  constructor() {
    super('change stream event without a string resume token');
    this.name = 'UnexpectedTokenError';
  }
}

export function endReasonFor(error: unknown): ChangeFeedEnd {
  if (error instanceof MissingImageError) return 'history_lost';
  if (error instanceof MongoServerError) {
    if (typeof error.code === 'number' && HISTORY_LOST_CODES.has(error.code)) return 'history_lost';
    if (error.codeName === 'ChangeStreamHistoryLost') return 'history_lost';
  }
  // Anything else the driver could not resume from (it retries resumable errors itself): the
  // subscriber must start over, from its last token.
  return 'invalidated';
}

/** The string form of a resume token (its `_data`), or null when it has another shape. */
export function tokenString(token: ResumeToken): string | null {
  if (typeof token !== 'object' || token === null) return null;
  const data: unknown = (token as { _data?: unknown })._data;
  return typeof data === 'string' && data.length > 0 ? data : null;
}

/** The resume token `watch({after})` hands to `startAfter`. */
export function tokenFromString(token: string): ResumeToken {
  return { _data: token };
}

/** Resume tokens are hex strings; anything else cannot come from this store. */
export function isWellFormedToken(token: string): boolean {
  return /^[0-9A-Fa-f]+$/.test(token) && token.length % 2 === 0;
}

export interface MappedChange {
  event: ChangeEvent;
  /** The cluster time of the commit that made the change (shared by a transaction's events). */
  clusterTime: Timestamp | null;
}

const TYPES: Partial<Record<ChangeStreamDocument['operationType'], ChangeType>> = {
  insert: 'created',
  replace: 'updated',
  update: 'updated',
  delete: 'deleted',
};

/**
 * The port's event for a document change, or null for events that are not document changes
 * (`drop`, `rename`, ... which an `invalidate` follows; the caller handles `invalidate`).
 */
export function toChangeEvent(
  change: ChangeStreamDocument<StoredDocument>,
  collection: string,
): MappedChange | null {
  let image: StoredDocument | null | undefined;
  switch (change.operationType) {
    case 'insert':
    case 'replace':
    case 'update':
      image = change.fullDocument;
      break;
    case 'delete':
      // The document as it was just before the delete (pre-image).
      image = change.fullDocumentBeforeChange;
      break;
    default:
      return null;
  }
  const type = TYPES[change.operationType];
  if (!type) return null;
  if (!image) throw new MissingImageError(change.operationType);
  const token = tokenString(change._id);
  if (token === null) throw new UnexpectedTokenError();
  const clusterTime = asTimestamp(change.clusterTime);
  const document = fromStored(image as JsonObject);
  return {
    event: {
      token,
      type,
      collection,
      documentId: String(change.documentKey._id),
      document,
      timestamp: eventTime(change.wallTime, clusterTime),
    },
    clusterTime,
  };
}

/** Commit time: the server's wall time (6.0+), else the cluster time's seconds. */
function eventTime(wallTime: Date | undefined, clusterTime: Timestamp | null): string {
  if (wallTime instanceof Date && !Number.isNaN(wallTime.getTime())) return wallTime.toISOString();
  if (clusterTime) return new Date(clusterTime.t * 1000).toISOString();
  return new Date().toISOString();
}
