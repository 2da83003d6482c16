/**
 * A collection's JSON Schema under `/{ns}/{collection}/_schema`. Registered before the document
 * routes, so `_schema` is never read as a document id (client ids cannot start with `_`).
 * Read-only keys may read it (the key middleware limits them to GET).
 */
import { z } from 'zod';
import { putSchemaBody } from '../../services/schemas/index.js';
import { MAX_SCHEMA_BYTES } from '../../services/schemas/schemaRules.js';
import type { JsonObject } from '../../store/port.js';
import { jsonBody } from '../middleware/body.js';
import { collectionOpenApi } from '../openapi/collectionDocument.js';
import { collectionPath } from '../openapi/components.js';
import { answer, bodyTypes, type OperationDeclaration, validatedJson } from '../openapi/declare.js';
import { schemaViewSchema, violationsPageSchema } from '../openapi/schemasAndTrash.js';
import { type FolioRouter, keyOf, param } from '../types.js';
import { bodyOf, declare, route } from './route.js';

const key = { auth: 'key' as const, tags: ['schemas'], params: collectionPath };

export const readSchema = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/_schema',
  operationId: 'readSchema',
  summary: 'The collection’s JSON Schema (read-only keys may read it)',
  ok: answer(200, 'The schema', schemaViewSchema),
  errors: [403, 404],
});

export const setSchema = declare({
  ...key,
  method: 'put',
  path: '/{ns}/{collection}/_schema',
  operationId: 'setSchema',
  summary:
    'Set the collection’s JSON Schema (draft 2020-12); existing documents are not rewritten (see `/violations`)',
  body: validatedJson(putSchemaBody),
  ok: answer(200, 'Set', schemaViewSchema),
  errors: [400, 403, 413, 415],
});

export const removeSchema = declare({
  ...key,
  method: 'delete',
  path: '/{ns}/{collection}/_schema',
  operationId: 'removeSchema',
  summary: 'Remove the collection’s schema',
  ok: answer(204, 'Removed'),
  errors: [403, 404],
});

export const listSchemaViolations = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/_schema/violations',
  operationId: 'listSchemaViolations',
  summary: 'Existing documents that fail the schema, in `_id` order, a bounded page at a time',
  query: z.object({
    limit: z.int().min(1).optional().meta({ description: 'Violating documents per page (default 20).' }),
    after: z.string().optional().meta({ description: 'The `next` of the previous page.' }),
  }),
  ok: answer(200, 'A page', violationsPageSchema),
  errors: [400, 403, 404],
});

export const collectionOpenApiDocument = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/_openapi',
  operationId: 'collectionOpenApiDocument',
  summary:
    'The OpenAPI document of this collection’s operations, its documents described by its schema plus Folio’s `$` fields',
  ok: answer(200, 'OpenAPI 3.1', z.record(z.string(), z.unknown())),
  errors: [403],
});

export const SCHEMA_OPERATIONS: OperationDeclaration[] = [
  readSchema,
  setSchema,
  removeSchema,
  listSchemaViolations,
  collectionOpenApiDocument,
];

/** `openApi`: the whole API's document (app.ts builds it: document.ts lists this module's routes). */
export function registerSchemaRoutes(router: FolioRouter, openApi: () => JsonObject): void {
  // Room for the envelope and for whitespace the stored text drops; the schema itself is
  // measured again as stored (schemaRules.ts).
  const body = jsonBody(bodyTypes(setSchema), 2 * MAX_SCHEMA_BYTES);

  route(router, readSchema, async (ctx) => {
    ctx.body = await ctx.services.schemas.get(keyOf(ctx), param(ctx, 'collection'));
  });

  route(router, setSchema, body, async (ctx) => {
    ctx.body = await ctx.services.schemas.set(keyOf(ctx), param(ctx, 'collection'), bodyOf(ctx, setSchema));
  });

  route(router, removeSchema, async (ctx) => {
    await ctx.services.schemas.remove(keyOf(ctx), param(ctx, 'collection'));
    ctx.status = 204;
  });

  // Each collection's view is derived from the whole API's document.
  route(router, collectionOpenApiDocument, async (ctx) => {
    const collection = param(ctx, 'collection');
    const schema = await ctx.services.schemas.schemaOf(keyOf(ctx), collection);
    ctx.body = collectionOpenApi(openApi(), param(ctx, 'ns'), collection, schema);
  });

  route(router, listSchemaViolations, async (ctx) => {
    ctx.body = await ctx.services.schemas.violations(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });
}
