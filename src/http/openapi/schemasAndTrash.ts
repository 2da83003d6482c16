/**
 * OpenAPI declarations of collection schemas (`/_schema`, `/_openapi`) and the trash
 * (`/_trash`), spread into operations.ts's PATHS. A function, called there once `keyed` and
 * `json` exist (the two modules import each other).
 */
import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { putSchemaBody } from '../../services/schemas/index.js';
import { collection, documentId, documentSchema, etagHeader, ns, versionRecordSchema } from './components.js';
import { json, keyed } from './operations.js';

const collectionPath = z.object({ ns, collection });
const trashPath = z.object({ ns, collection, id: documentId });

const violationSchema = z
  .object({ instancePath: z.string(), keyword: z.string(), message: z.string() })
  .meta({ id: 'SchemaViolation', description: 'One error of the validator (Ajv).' });

const schemaViewSchema = z
  .object({
    schema: z.unknown().meta({ description: 'The JSON Schema (draft 2020-12) as set.' }),
    mode: z.enum(['enforce', 'warn']),
    revision: z.string().meta({ description: 'New on every PUT.' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'CollectionSchema' });

const violationsPageSchema = z
  .object({
    data: z.array(z.object({ _id: z.string(), errors: z.array(violationSchema) })),
    meta: z.object({
      scanned: z.int().meta({ description: 'Documents read for this page (at most 1000).' }),
      hasMore: z.boolean(),
      next: z.string().nullable().meta({ description: 'Pass as `after` for the next page.' }),
    }),
  })
  .meta({ id: 'SchemaViolations' });

const trashItemSchema = z
  .object({
    _id: z.string(),
    deletedAt: z.string().meta({ format: 'date-time' }),
    deletedBy: z.string().meta({ description: 'Hint of the key that deleted it.' }),
    expiresAt: z.string().meta({ format: 'date-time', description: 'Erased for good from then on.' }),
    version: z.int().min(1).meta({ description: 'The `$version` of its last version.' }),
    document: documentSchema,
  })
  .meta({ id: 'TrashItem' });

const trashPageSchema = z
  .object({
    data: z.array(trashItemSchema),
    meta: z.object({
      limit: z.int(),
      hasMore: z.boolean(),
      next: z.string().nullable().meta({ description: 'Pass as `after` for the next page.' }),
    }),
  })
  .meta({ id: 'TrashPage' });

export const schemaAndTrashPaths = (): ZodOpenApiPathsObject => ({
  '/{ns}/{collection}/_schema': {
    get: keyed({
      tags: ['schemas'],
      summary: 'The collection’s JSON Schema (read-only keys may read it)',
      requestParams: { path: collectionPath },
      ok: { '200': { description: 'The schema', content: json(schemaViewSchema) } },
      errors: [403, 404],
    }),
    put: keyed({
      tags: ['schemas'],
      summary:
        'Set the collection’s JSON Schema (draft 2020-12); existing documents are not rewritten (see `/violations`)',
      requestParams: { path: collectionPath },
      requestBody: { required: true, content: json(putSchemaBody) },
      ok: { '200': { description: 'Set', content: json(schemaViewSchema) } },
      errors: [400, 403, 413, 415],
    }),
    delete: keyed({
      tags: ['schemas'],
      summary: 'Remove the collection’s schema',
      requestParams: { path: collectionPath },
      ok: { '204': { description: 'Removed' } },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_schema/violations': {
    get: keyed({
      tags: ['schemas'],
      summary: 'Existing documents that fail the schema, in `_id` order, a bounded page at a time',
      requestParams: {
        path: collectionPath,
        query: z.object({
          limit: z.string().optional().meta({ description: 'Violating documents per page (default 20).' }),
          after: z.string().optional().meta({ description: 'The `next` of the previous page.' }),
        }),
      },
      ok: { '200': { description: 'A page', content: json(violationsPageSchema) } },
      errors: [400, 403, 404],
    }),
  },
  '/{ns}/{collection}/_openapi': {
    get: keyed({
      tags: ['schemas'],
      summary:
        'The OpenAPI document of this collection’s operations, its documents described by its schema plus Folio’s `$` fields',
      requestParams: { path: collectionPath },
      ok: { '200': { description: 'OpenAPI 3.1', content: json(z.record(z.string(), z.unknown())) } },
      errors: [403],
    }),
  },
  '/{ns}/{collection}/_trash': {
    get: keyed({
      tags: ['trash'],
      summary: 'Deleted documents still in the trash, newest deletion first',
      requestParams: {
        path: collectionPath,
        query: z.object({
          limit: z.string().optional().meta({ description: 'Page size (default 20, plan maximum).' }),
          after: z.string().optional().meta({ description: 'The `next` of the previous page.' }),
        }),
      },
      ok: { '200': { description: 'A page', content: json(trashPageSchema) } },
      errors: [400, 403],
    }),
  },
  '/{ns}/{collection}/_trash/{id}': {
    get: keyed({
      tags: ['trash'],
      summary: 'A trashed document’s last version and its history',
      requestParams: { path: trashPath },
      ok: {
        '200': {
          description: 'The entry',
          content: json(trashItemSchema.extend({ versions: z.array(versionRecordSchema) })),
        },
      },
      errors: [403, 404],
    }),
    delete: keyed({
      tags: ['trash'],
      summary: 'Erase a trashed document and its history for good, now',
      requestParams: { path: trashPath },
      ok: { '204': { description: 'Erased' } },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_trash/{id}/restore': {
    post: keyed({
      tags: ['trash'],
      summary:
        'Bring the document back as a new version (history continuous, one `document.created` event); 409 when the id is taken again',
      requestParams: { path: trashPath },
      ok: {
        '201': {
          description: 'Restored',
          content: json(documentSchema),
          headers: etagHeader.extend({
            'X-Document-Version': z.string().meta({ description: 'The new `$version`.' }),
            Location: z.string(),
          }),
        },
      },
      errors: [403, 404, 409, 413, 422],
    }),
  },
});
