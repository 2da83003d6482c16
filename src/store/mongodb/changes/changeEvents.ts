/**
 * The store's change stream, as data and pure functions (unit-tested with sample documents):
 * the pipeline and options it opens with, tokens, and the mapping from MongoDB change documents
 * to the port's events.
 */
import type { ChangeStreamDocument, ChangeStreamOptions, Document, ResumeToken, Timestamp } from 'mongodb';
import type { ChangeEvent, ChangeType, DataScope } from '../../port.js';
import type { StoredDocument } from '../../storedForm.js';
import { fromStored } from '../../storedForm.js';
import { erasedOrWhole, isErasingChange } from '../documents/erasure.js';
import { COLLECTION_NAME_PATTERN, projectDbPattern } from '../layout/naming.js';
import { asTimestamp } from './clusterClock.js';

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
export function changeStreamPipeline(
  target: StreamTarget,
  options: { splitLargeEvents?: boolean } = {},
): Document[] {
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
    // Must be the last stage; the server refuses it before 6.0.9 (see supportsSplitLargeEvent).
    ...(options.splitLargeEvents ? [{ $changeStreamSplitLargeEvent: {} }] : []),
  ];
}

/**
 * The pipeline of the probe that reads the token of an event too large to send: the same
 * events, with only the small fields that say which event it was.
 */
export function probePipeline(target: StreamTarget): Document[] {
  return [
    ...changeStreamPipeline(target),
    { $project: { _id: 1, operationType: 1, ns: 1, documentKey: 1, clusterTime: 1 } },
  ];
}

/** `$changeStreamSplitLargeEvent` exists from MongoDB 7.0, and 6.0.9 on the 6.0 line. */
export function supportsSplitLargeEvent(version: readonly number[] | null): boolean {
  if (!version) return false;
  const [major = 0, minor = 0, patch = 0] = version;
  if (major !== 6) return major > 6;
  return minor > 0 || patch >= 9;
}

/** A split event's fragments read so far (`$changeStreamSplitLargeEvent`). */
export interface FragmentJoin {
  /** The stream's position before the first fragment (nothing of the event handed out yet). */
  before: string | null;
  parts: Document[];
  of: number;
}

export type JoinStep =
  | { kind: 'whole' }
  | { kind: 'partial'; join: FragmentJoin }
  | { kind: 'joined'; change: ChangeStreamDocument<StoredDocument> }
  /** A fragment that does not continue what was read (resumed half-way through an event). */
  | { kind: 'broken' };

function splitOf(change: Document): { fragment: number; of: number } | null {
  const split: unknown = change.splitEvent;
  if (typeof split !== 'object' || split === null) return null;
  const { fragment, of } = split as { fragment?: unknown; of?: unknown };
  return typeof fragment === 'number' && typeof of === 'number' ? { fragment, of } : null;
}

/**
 * One more event from a stream that splits large events: a whole event, a fragment to keep, or
 * the last fragment, which gives the joined event. Fragments hold disjoint top-level fields of
 * the event; the joined event's `_id` is the last fragment's token, so resuming after it skips
 * the whole event.
 */
export function joinFragment(
  join: FragmentJoin | null,
  change: ChangeStreamDocument<StoredDocument>,
  positionBefore: string | null,
): JoinStep {
  const split = splitOf(change as Document);
  if (!split) return { kind: 'whole' };
  let current: FragmentJoin;
  if (split.fragment === 1) {
    current = { before: positionBefore, parts: [change as Document], of: split.of };
  } else if (join && join.of === split.of && join.parts.length === split.fragment - 1) {
    current = { ...join, parts: [...join.parts, change as Document] };
  } else {
    return { kind: 'broken' };
  }
  if (split.fragment < split.of) return { kind: 'partial', join: current };
  const merged: Document = {};
  // Top-level change-event fields named by the server (never a user's field names).
  for (const part of current.parts) {
    for (const [name, value] of Object.entries(part)) if (name !== 'splitEvent') merged[name] = value;
  }
  return { kind: 'joined', change: merged as ChangeStreamDocument<StoredDocument> };
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
  // The first half of an erasure (erasure.ts): its `deleted` event follows.
  if (isErasingChange(change)) return { kind: 'other' };
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
      // The document as it was just before the delete (pre-image); an erased one's metadata.
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
      document: fromStored(erasedOrWhole(image)),
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
