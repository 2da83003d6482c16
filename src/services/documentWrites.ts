/**
 * The pieces every document write shares (single writes, bulk and import): choosing a new
 * document's id, building the next version with its metadata, and the store write that commits
 * it with its version record.
 */
import { badRequest } from '../errors.js';
import { isoNow, newId } from '../ids.js';
import type { FolioDocument, JsonObject, JsonValue, PutWrite, WriteOperation } from '../store/port.js';
import type { KeyContext } from './context.js';
import { assertDocumentId, assertDocumentSize, type DocumentSizeLimits } from './documentRules.js';

/** What a write needs to know of the current version: none, or its number and birth time. */
export type CurrentVersion = Pick<FolioDocument, '$version' | '$createdAt'> | null;

/** A new document's id: the one the client gave (validated), or a fresh `doc_<ULID>`. */
export function newDocumentId(given: JsonValue | undefined, field = '_id'): string {
  if (given === undefined) return newId('doc');
  if (typeof given !== 'string') throw badRequest(`${field} must be a string.`, { field });
  assertDocumentId(given);
  return given;
}

/**
 * The next version of a document: `fields` as its whole content, metadata from `current`;
 * 413 when over the size `limits` (left out only by callers that measured it already).
 */
export function buildDocument(
  id: string,
  fields: JsonObject,
  current: CurrentVersion,
  limits?: DocumentSizeLimits,
): FolioDocument {
  const now = isoNow();
  const doc: FolioDocument = {
    _id: id,
    ...fields,
    $createdAt: current?.$createdAt ?? now,
    $updatedAt: now,
    $version: (current?.$version ?? 0) + 1,
  };
  if (limits !== undefined) assertDocumentSize(doc, limits);
  return doc;
}

/** The store write for `document`, conditioned on the version read, with its history rule. */
export function putWrite(
  ctx: KeyContext,
  document: FolioDocument,
  expectedVersion: number,
  operation: WriteOperation,
): PutWrite {
  return {
    kind: 'put',
    expectedVersion,
    document,
    operation,
    apiKeyHint: ctx.key.hint,
    keepVersions: ctx.limits.storedVersions,
  };
}
