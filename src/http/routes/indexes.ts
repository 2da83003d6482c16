/**
 * Declared indexes of a collection under `/{ns}/{collection}/_indexes`. Registered before the
 * document routes, so `_indexes` is never read as a document id (client ids cannot start with `_`).
 * Read-only keys may list (the key middleware limits them to GET).
 */
import { z } from 'zod';
import { createIndexSchema } from '../../services/indexes.js';
import { jsonBody } from '../middleware/body.js';
import { collectionPath, indexSchema, locationHeader } from '../openapi/components.js';
import { answer, bodyTypes, type OperationDeclaration, validatedJson } from '../openapi/declare.js';
import { type FolioRouter, keyOf, param } from '../types.js';
import { bodyOf, declare, route } from './route.js';

export const listIndexes = declare({
  auth: 'key',
  method: 'get',
  path: '/{ns}/{collection}/_indexes',
  operationId: 'listIndexes',
  tags: ['indexes'],
  summary: 'The collection’s declared indexes and their state (read-only keys may list)',
  params: collectionPath,
  ok: answer(200, 'Indexes', z.object({ data: z.array(indexSchema) })),
  errors: [403],
});

export const createIndex = declare({
  auth: 'key',
  method: 'post',
  path: '/{ns}/{collection}/_indexes',
  operationId: 'createIndex',
  tags: ['indexes'],
  summary:
    'Declare an index and build it; the answer says `ready` or `failed` (a unique index over duplicates)',
  params: collectionPath,
  body: validatedJson(createIndexSchema),
  ok: answer(201, 'Built (or failed: see `state`)', indexSchema, locationHeader),
  errors: [400, 403, 409, 413, 415],
});

export const dropIndex = declare({
  auth: 'key',
  method: 'delete',
  path: '/{ns}/{collection}/_indexes/{name}',
  operationId: 'dropIndex',
  tags: ['indexes'],
  summary: 'Drop a declared index',
  params: collectionPath.extend({ name: z.string().meta({ description: 'Index name.' }) }),
  ok: answer(204, 'Dropped'),
  errors: [403, 404],
});

export const INDEX_OPERATIONS: OperationDeclaration[] = [listIndexes, createIndex, dropIndex];

export function registerIndexRoutes(router: FolioRouter): void {
  const body = jsonBody(bodyTypes(createIndex), 16 * 1024);

  route(router, listIndexes, async (ctx) => {
    ctx.body = { data: await ctx.services.indexes.list(keyOf(ctx), param(ctx, 'collection')) };
  });

  route(router, createIndex, body, async (ctx) => {
    const input = bodyOf(ctx, createIndex);
    const index = await ctx.services.indexes.create(keyOf(ctx), param(ctx, 'collection'), input);
    ctx.status = 201;
    ctx.set(
      'Location',
      `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/_indexes/${encodeURIComponent(index.name)}`,
    );
    ctx.body = index;
  });

  route(router, dropIndex, async (ctx) => {
    await ctx.services.indexes.drop(keyOf(ctx), param(ctx, 'collection'), param(ctx, 'name'));
    ctx.status = 204;
  });
}
