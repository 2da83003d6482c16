/**
 * The OpenAPI document of one collection (`GET /{ns}/{collection}/_openapi`): the operations under
 * `/{ns}/{collection}` with the project and collection filled in, and `Document` /
 * `DocumentBody` replaced by the collection's own schema (plus Folio's `$` fields for documents
 * read back), so a typed client can be generated for it. Without a schema the generic ones stay.
 *
 * The user schema is embedded as a schema resource of its own (`$id`), so its local references
 * (`#/$defs/...`) resolve inside it, not against the OpenAPI document.
 */
import type { JsonObject, JsonValue } from '../../store/port.js';

const PREFIX = '/{ns}/{collection}';

export function collectionOpenApi(
  full: JsonObject,
  ns: string,
  collection: string,
  userSchema: JsonValue | null,
): JsonObject {
  const name = typeName(collection);
  const paths: JsonObject = {};
  const source = (full.paths ?? {}) as JsonObject;
  for (const [path, item] of Object.entries(source)) {
    if (path !== PREFIX && !path.startsWith(`${PREFIX}/`)) continue;
    const concrete = `/${encodeURIComponent(ns)}/${encodeURIComponent(collection)}${path.slice(PREFIX.length)}`;
    paths[concrete] =
      userSchema === null ? withoutFixedParams(item) : retarget(withoutFixedParams(item), name);
  }
  const components = structuredClone((full.components ?? {}) as JsonObject);
  if (userSchema !== null) {
    const schemas = (components.schemas ?? {}) as JsonObject;
    const body: JsonValue =
      typeof userSchema === 'object' && userSchema !== null && !Array.isArray(userSchema)
        ? { $id: `urn:folio:collection:${collection}`, ...userSchema }
        : userSchema;
    schemas[`${name}DocumentBody`] = body;
    schemas[`${name}Document`] = {
      allOf: [{ $ref: `#/components/schemas/${name}DocumentBody` }, metadataSchema()],
      description: `A document of ${collection}: its schema plus Folio's managed fields.`,
    };
    components.schemas = schemas;
  }
  const info = { ...((full.info ?? {}) as JsonObject), title: `Folio: ${ns}/${collection}` };
  return { ...full, info, paths, components };
}

/** `orders` → `Orders`, `line-items` → `LineItems`: a component name from the collection's. */
export function typeName(collection: string): string {
  const words = collection.split(/[^A-Za-z0-9]+/).filter(Boolean);
  const joined = words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
  return /^[A-Za-z]/.test(joined) ? joined : `C${joined}`;
}

function metadataSchema(): JsonObject {
  return {
    type: 'object',
    required: ['_id', '$createdAt', '$updatedAt', '$version'],
    properties: {
      _id: { type: 'string' },
      $createdAt: { type: 'string', format: 'date-time' },
      $updatedAt: { type: 'string', format: 'date-time' },
      $version: { type: 'integer', minimum: 1 },
    },
  };
}

/** The path item without the `ns` and `collection` parameters (the path names them now). */
function withoutFixedParams(item: JsonValue): JsonValue {
  return mapJson(item, (value) => {
    if (!Array.isArray(value)) return undefined;
    const kept = value.filter((p) => !isFixedParam(p));
    return kept.length === value.length ? undefined : kept;
  });
}

function isFixedParam(value: JsonValue): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  if (value.in === 'path' && (value.name === 'ns' || value.name === 'collection')) return true;
  const ref = value.$ref;
  return ref === '#/components/parameters/ns' || ref === '#/components/parameters/collection';
}

/** References to the generic document schemas, pointed at the collection's. */
function retarget(item: JsonValue, name: string): JsonValue {
  return mapJson(item, (value) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (value.$ref === '#/components/schemas/Document')
      return { $ref: `#/components/schemas/${name}Document` };
    if (value.$ref === '#/components/schemas/DocumentBody')
      return { $ref: `#/components/schemas/${name}DocumentBody` };
    return undefined;
  });
}

/** A copy of `value` where `replace` may swap any node (undefined: keep and descend). Bounded by the document, which Folio built. */
function mapJson(value: JsonValue, replace: (value: JsonValue) => JsonValue | undefined): JsonValue {
  const replaced = replace(value);
  const node = replaced ?? value;
  if (Array.isArray(node)) return node.map((child) => mapJson(child, replace));
  if (typeof node === 'object' && node !== null) {
    const out: JsonObject = {};
    for (const [key, child] of Object.entries(node))
      Object.defineProperty(out, key, {
        value: mapJson(child, replace),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  }
  return node;
}
