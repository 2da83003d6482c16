/**
 * What a user document may contain. Enforced on every write path (create, replace, patches,
 * later import and bulk) so stores only ever see safe field names.
 */
import { badRequest, payloadTooLarge } from '../errors.js';
import { defineField, fieldNameProblem, printableName } from '../fieldNames.js';
import { storedBsonSize, storedBsonSizeBound } from '../store/documentSize.js';
import type { FolioDocument, JsonObject, JsonValue } from '../store/port.js';
import { isMetaField, RESERVED_FIELD } from '../store/storedForm.js';

export const COLLECTION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Client-chosen ids (PUT, POST with `_id`, import): no leading `_`, so `_stream` etc. stay routes. */
export const DOCUMENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,127}$/;

export function assertCollectionName(name: string): void {
  if (!COLLECTION_PATTERN.test(name)) {
    throw badRequest(
      `Invalid collection name "${name}": use 1-64 letters, digits, _ or -, starting with a letter or digit.`,
      { collection: name },
    );
  }
}

export function assertDocumentId(id: string): void {
  if (!DOCUMENT_ID_PATTERN.test(id)) {
    throw badRequest(
      `Invalid document id "${id}": use 1-128 letters, digits, _ . : @ or -, starting with a letter or digit.`,
      { id },
    );
  }
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Levels of nesting a document may have; every body is held to it (see `nestingDepth`). */
export const MAX_DEPTH = 64;

/**
 * Whether `value` nests deeper than `limit` levels (a scalar is level 0, `{"a":1}` level 1).
 * Iterative, and stops at the first branch past the limit, so it is safe on any parsed input.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    if (item.depth >= limit) return true;
    for (const child of Object.values(item.value)) pending.push({ value: child, depth: item.depth + 1 });
  }
  return false;
}

/**
 * Throws invalid_body for a field name the rule in fieldNames.ts refuses, at any depth, or for
 * nesting deeper than MAX_DEPTH. Iterative, so no input can exhaust the stack.
 */
function assertFieldNames(root: JsonValue): void {
  // Each value with the way to it (its parent's entry and its key or index): the path is
  // spelled only for an error, not for every field of every document written.
  const pending: NamedValue[] = [{ value: root, depth: 0, parent: null, step: '' }];
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value, depth } = item;
    if (depth > MAX_DEPTH) throw badRequest(`Document nests deeper than ${MAX_DEPTH} levels.`);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++)
        pending.push({ value: value[i] as JsonValue, depth: depth + 1, parent: item, step: i });
    } else if (isJsonObject(value)) {
      for (const key of Object.keys(value)) {
        const problem = fieldNameProblem(key);
        if (problem) {
          const where = pathTo(item, key);
          throw badRequest(`Field "${printableName(where)}": ${problem}.`, { field: where });
        }
        pending.push({ value: value[key] as JsonValue, depth: depth + 1, parent: item, step: key });
      }
    }
  }
}

interface NamedValue {
  value: JsonValue;
  depth: number;
  parent: NamedValue | null;
  /** Its key in its parent object, or index in its parent array. */
  step: string | number;
}

/** `a.b[2].c`: the path to `key` of the object at `item`, spelled as the error names it. */
function pathTo(item: NamedValue, key: string): string {
  const steps: Array<string | number> = [key];
  for (let at: NamedValue | null = item; at?.parent; at = at.parent) steps.push(at.step);
  let path = '';
  for (const step of steps.reverse()) {
    if (typeof step === 'number') path = `${path}[${step}]`;
    else path = path ? `${path}.${step}` : step;
  }
  return path;
}

/**
 * Validate a client body as a document's user fields. The server-managed fields (`$createdAt`,
 * `$updatedAt`, `$version`) are dropped so a client may PUT back what it read; `_id` is
 * returned separately for the caller to check against the target id.
 */
export function userFields(body: unknown, what = 'Body'): { fields: JsonObject; id: JsonValue | undefined } {
  if (!isJsonObject(body)) throw badRequest(`${what} must be a JSON object.`);
  const fields: JsonObject = {};
  let id: JsonValue | undefined;
  for (const [key, value] of Object.entries(body)) {
    if (key === '_id') id = value;
    else if (isMetaField(key)) continue;
    else if (key === RESERVED_FIELD)
      throw badRequest(`Field "${RESERVED_FIELD}" is reserved.`, { field: key });
    // Own data property whatever the name (assignment to `__proto__` would set the prototype);
    // assertFieldNames then refuses the names that are not allowed.
    else defineField(fields, key, value);
  }
  assertFieldNames(fields);
  return { fields, id };
}

/** `_id` in a body must be absent or equal to the document's id. */
export function assertBodyIdMatches(bodyId: JsonValue | undefined, id: string): void {
  if (bodyId !== undefined && bodyId !== id) {
    throw badRequest(`Body _id "${String(bodyId)}" does not match the document id "${id}".`, {
      field: '_id',
    });
  }
}

/**
 * A document's size limits, both checked before every write: its JSON size (what the client
 * sent, `documents.maxBytes`) and its stored BSON size (`documents.maxBsonBytes`, see
 * store/documentSize.ts: what keeps MongoDB's change events under 16 MiB). The BSON rule lives
 * here rather than in the MongoDB store so both stores accept exactly the same documents.
 */
/** A document's size limits: JSON bytes as sent, and the stored form's BSON bytes. */
export interface DocumentSizeLimits {
  maxBytes: number;
  maxBsonBytes: number;
}

export function assertDocumentSize(doc: FolioDocument, limits: DocumentSizeLimits): void {
  assertMeasuredSize(Buffer.byteLength(JSON.stringify(doc)), () => doc, limits);
}

/**
 * The same rule for a document known by its JSON size (`bytes`, what JSON.stringify of it
 * takes): an import measures each record from the text it spools rather than serialising the
 * document once more. `doc` is built only when the BSON bound must be checked exactly.
 */
export function assertMeasuredSize(
  bytes: number,
  doc: () => FolioDocument,
  limits: DocumentSizeLimits,
): void {
  if (bytes > limits.maxBytes) {
    throw payloadTooLarge(`Document is ${bytes} bytes; the maximum is ${limits.maxBytes}.`, {
      bytes,
      max: limits.maxBytes,
    });
  }
  // Most documents are far below the stored limit even at BSON's worst growth over JSON: measuring
  // them again as BSON was about 3 % of a create's CPU.
  if (storedBsonSizeBound(bytes) <= limits.maxBsonBytes) return;
  const bsonBytes = storedBsonSize(doc());
  if (bsonBytes > limits.maxBsonBytes) {
    throw payloadTooLarge(
      `Document takes ${bsonBytes} bytes as stored (BSON); the maximum is ${limits.maxBsonBytes}. ` +
        'Long arrays of small values take far more room stored than as JSON.',
      { bsonBytes, maxBsonBytes: limits.maxBsonBytes },
    );
  }
}
