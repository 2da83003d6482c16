/**
 * A collection's JSON Schema under `/{ns}/{collection}/_schema`. Registered before the document
 * routes, so `_schema` is never read as a document id (client ids cannot start with `_`).
 * Read-only keys may read it (the key middleware limits them to GET).
 */
import { putSchemaBody } from '../../services/schemas/index.js';
import { MAX_SCHEMA_BYTES } from '../../services/schemas/schemaRules.js';
import type { JsonObject } from '../../store/port.js';
import { FOLIO_VERSION } from '../../version.js';
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { collectionOpenApi } from '../openapi/collectionDocument.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import { type FolioRouter, keyOf, param } from '../types.js';
import { parseBody } from './parseBody.js';

const BASE = '/:ns/:collection/_schema';

export function registerSchemaRoutes(router: FolioRouter): void {
  // Room for the envelope and for whitespace the stored text drops; the schema itself is
  // measured again as stored (schemaRules.ts).
  const body = jsonBody([JSON_TYPE], 2 * MAX_SCHEMA_BYTES);

  router.get(BASE, async (ctx) => {
    ctx.body = await ctx.services.schemas.get(keyOf(ctx), param(ctx, 'collection'));
  });

  router.put(BASE, body, async (ctx) => {
    const input = parseBody(putSchemaBody, ctx.request.body);
    ctx.body = await ctx.services.schemas.set(keyOf(ctx), param(ctx, 'collection'), input);
  });

  router.delete(BASE, async (ctx) => {
    await ctx.services.schemas.remove(keyOf(ctx), param(ctx, 'collection'));
    ctx.status = 204;
  });

  // The whole API's document, built once; each collection's view is derived from it.
  let full: JsonObject | undefined;
  router.get('/:ns/:collection/_openapi', async (ctx) => {
    full ??= JSON.parse(JSON.stringify(buildOpenApiDocument(FOLIO_VERSION))) as JsonObject;
    const collection = param(ctx, 'collection');
    const schema = await ctx.services.schemas.schemaOf(keyOf(ctx), collection);
    ctx.body = collectionOpenApi(full, param(ctx, 'ns'), collection, schema);
  });

  router.get(`${BASE}/violations`, async (ctx) => {
    ctx.body = await ctx.services.schemas.violations(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });
}
