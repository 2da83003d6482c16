/**
 * The store's change stream, as data and pure functions (unit-tested with sample documents):
 * the pipeline and options it opens with, tokens, and the mapping from MongoDB change documents
 * to the port's events.
 */
import type { ChangeStreamDocument, ChangeStreamOptions, Document, ResumeToken, Timestamp } from 'mongodb';
import type { ChangeEvent, ChangeType, DataScope, JsonObject } from '../port.js';
import type { StoredDocument } from '../storedForm.js';
import { fromStored } from '../storedForm.js';
import { asTimestamp } from './clusterClock.js';
import { COLLECTION_NAME_PATTERN, projectDbPattern } from './naming.js';

/**
 * Post-images for updates (Folio's own writes are inserts and replacements, whose events always
 * carry the new document; an `update` by anyone else needs the recorded post-image) and
 * pre-images for deletes. `whenAvailable`, not `required`: with one stream for the whole
 * deployment, one event without its image (pre-images expired, a collection recorded without
 * them) must not stop every subscriber; such an event is skipped (see `toChangeEvent`).
 */
export const CHANGE_STREAM_OPTIONS = {
  fullDocument: 'whenAvailable',
  fullDocumentBeforeChange: 'whenAvailable',
} as const satisfies ChangeStreamOptions;

const DOCUMENT_OPERATIONS = ['insert', 'replace', 'update', 'delete'];

/** Which events one stream reads: a whole deployment's Folio data, or one collection of it. */
export type StreamTarget =
  | { kind: 'all'; prefix: string }
  | { kind: 'collection'; db: string; collection: string };

/**
 * The aggregation pipeline after `$changeStream`:
 * 1. `$match`: document changes of Folio collections in Folio's project databases (never the
 *    version sidecars or the system database), plus the drops and renames that end
 *    subscriptions. Filtering on the server keeps every other database's events off the wire.
 * 2. `$set`: the pre-image stays on deletes only. `fullDocumentBeforeChange` is one option per
 *    stream, so the server looks pre-images up for replacements too; removing it here keeps
 *    replace events from carrying the document twice over the network (and further from the
 *    16 MB event limit). `_id` (the resume token) is left untouched, as the server requires.
 */
export function changeStreamPipeline(target: StreamTarget): Document[] {
  const db = target.kind === 'all' ? { $regex: projectDbPattern(target.prefix) } : target.db;
  const coll = target.kind === 'all' ? { $regex: COLLECTION_NAME_PATTERN.source } : target.collection;
  return [
    {
      $match: {
        'ns.db': db,
        $or: [
          { operationType: { $in: [...DOCUMENT_OPERATIONS, 'drop'] }, 'ns.coll': coll },
          { operationType: 'rename', $or: [{ 'ns.coll': coll }, { 'to.coll': coll }] },
          { operationType: 'dropDatabase' },
        ],
      },
    },
    {
      $set: {
        fullDocumentBeforeChange: {
          $cond: [{ $eq: ['$operationType', 'delete'] }, '$fullDocumentBeforeChange', '$$REMOVE'],
        },
      },
    },
  ];
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

/** The server writes tokens in upper-case hex; a client may have changed the case. */
export function normalizeToken(token: string): string {
  return token.toUpperCase();
}

/**
 * Orders two tokens (event tokens or a cursor's position). A token's `_data` is the hex of a
 * KeyString, which MongoDB encodes so that byte order is token order; same-case hex keeps it.
 */
export function compareTokens(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
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

/** A change stream document that is not a change of a document of this store. */
export type ChangeKind =
  | { kind: 'document'; db: string; collection: string }
  /** The namespaces whose subscriptions end (`collection` null: the whole database). */
  | { kind: 'dropped'; namespaces: Array<{ db: string; collection: string | null }> }
  | { kind: 'invalidate' }
  | { kind: 'other' };

export function classifyChange(change: ChangeStreamDocument<StoredDocument>): ChangeKind {
  switch (change.operationType) {
    case 'insert':
    case 'replace':
    case 'update':
    case 'delete':
      return { kind: 'document', db: change.ns.db, collection: change.ns.coll };
    case 'drop':
      return { kind: 'dropped', namespaces: [{ db: change.ns.db, collection: change.ns.coll }] };
    case 'rename':
      // Both names: the old one is gone, and the new one replaced whatever was there.
      return {
        kind: 'dropped',
        namespaces: [
          { db: change.ns.db, collection: change.ns.coll },
          { db: change.to.db, collection: change.to.coll },
        ],
      };
    case 'dropDatabase':
      return { kind: 'dropped', namespaces: [{ db: change.ns.db, collection: null }] };
    case 'invalidate':
      return { kind: 'invalidate' };
    default:
      return { kind: 'other' };
  }
}

/**
 * The port's event for a document change, or null when it cannot be told: not a document
 * change, or its image is missing (pre-images expired, or written by something other than Folio
 * into a collection that records none). Throws on a token that is not the `{_data}` string every
 * MongoDB 6.0+ sends.
 */
export function toChangeEvent(
  change: ChangeStreamDocument<StoredDocument>,
  scope: DataScope,
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
  if (!type || !image) return null;
  const token = tokenString(change._id);
  if (token === null) throw new Error('change stream event without a string resume token');
  const clusterTime = asTimestamp(change.clusterTime);
  return {
    event: {
      token,
      scope,
      type,
      collection: change.ns.coll,
      documentId: String(change.documentKey._id),
      document: fromStored(image as JsonObject),
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
