/**
 * The stored form of a document, shared by both stores and by the query translator.
 *
 * The API's metadata names (`$version`, ...) cannot be stored or queried in MongoDB (a leading
 * `$` reads as an operator), so they live under one reserved top-level object, `_folio`.
 * User documents may not use that name (services/documentRules.ts rejects it).
 */
import type { FolioDocument, JsonObject, JsonValue } from './port.js';

export const RESERVED_FIELD = '_folio';

/** API metadata field → stored path. */
export const META_PATHS = {
  $version: '_folio.version',
  $createdAt: '_folio.createdAt',
  $updatedAt: '_folio.updatedAt',
} as const;

export type MetaField = keyof typeof META_PATHS;

export function isMetaField(name: string): name is MetaField {
  return Object.hasOwn(META_PATHS, name);
}

/** A document as stored: `{_id, ...userFields, _folio: {version, createdAt, updatedAt}}`. */
export interface StoredDocument extends JsonObject {
  _id: string;
  _folio: { version: number; createdAt: string; updatedAt: string };
}

/** Map an API field path (`$version`, `address.city`, `_id`) to its stored path. */
export function storedPath(apiPath: string): string {
  return isMetaField(apiPath) ? META_PATHS[apiPath] : apiPath;
}

export function toStored(doc: FolioDocument): StoredDocument {
  const { _id, $createdAt, $updatedAt, $version, ...user } = doc;
  return { _id, ...user, _folio: { version: $version, createdAt: $createdAt, updatedAt: $updatedAt } };
}

/**
 * Map a stored document (possibly projected, so metadata may be partial or absent) back to the
 * API form: `_id` first, user fields, then the metadata present.
 */
export function fromStored(stored: JsonObject): FolioDocument {
  const { _id, _folio, ...user } = stored;
  const out: JsonObject = { _id: _id ?? null, ...user };
  if (_folio && typeof _folio === 'object' && !Array.isArray(_folio)) {
    const meta = _folio as { [k: string]: JsonValue };
    if (meta.createdAt !== undefined) out.$createdAt = meta.createdAt;
    if (meta.updatedAt !== undefined) out.$updatedAt = meta.updatedAt;
    if (meta.version !== undefined) out.$version = meta.version;
  }
  return out as FolioDocument;
}
