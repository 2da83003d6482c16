/**
 * A collection's trash under `/{ns}/{collection}/_trash`: list, read one with its history,
 * restore, erase. Registered before the document routes, so `_trash` is never read as a
 * document id (client ids cannot start with `_`). Read-only keys may list and read.
 */
import { z } from 'zod';
import {
  collectionPath,
  documentSchema,
  etagHeader,
  locationHeader,
  versionRecordSchema,
} from '../openapi/components.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import { trashItemSchema, trashPageSchema, trashPath } from '../openapi/schemasAndTrash.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';
import { declare, route } from './route.js';

const key = { auth: 'key' as const, tags: ['trash'] };

export const listTrash = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/_trash',
  operationId: 'listTrash',
  summary: 'Deleted documents still in the trash, newest deletion first',
  params: collectionPath,
  query: z.object({
    limit: z.int().min(1).optional().meta({ description: 'Page size (default 20, plan maximum).' }),
    after: z.string().optional().meta({ description: 'The `next` of the previous page.' }),
  }),
  ok: answer(200, 'A page', trashPageSchema),
  errors: [400, 403],
});

export const readTrashed = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/_trash/{id}',
  operationId: 'readTrashed',
  summary: 'A trashed document’s last version and its history',
  params: trashPath,
  ok: answer(200, 'The entry', trashItemSchema.extend({ versions: z.array(versionRecordSchema) })),
  errors: [403, 404],
});

export const eraseTrashed = declare({
  ...key,
  method: 'delete',
  path: '/{ns}/{collection}/_trash/{id}',
  operationId: 'eraseTrashed',
  summary: 'Erase a trashed document and its history for good, now',
  params: trashPath,
  ok: answer(204, 'Erased'),
  errors: [403, 404],
});

export const restoreTrashed = declare({
  ...key,
  method: 'post',
  path: '/{ns}/{collection}/_trash/{id}/restore',
  operationId: 'restoreTrashed',
  summary:
    'Bring the document back as a new version (history continuous, one `document.created` event); 409 when the id is taken again',
  params: trashPath,
  ok: answer(
    201,
    'Restored',
    documentSchema,
    etagHeader.extend(locationHeader.shape).extend({
      'X-Document-Version': z.int().meta({ description: 'The new `$version`.' }),
    }),
  ),
  errors: [403, 404, 409, 413, 422],
});

export const TRASH_OPERATIONS: OperationDeclaration[] = [
  listTrash,
  readTrashed,
  eraseTrashed,
  restoreTrashed,
];

function entryAt(ctx: Ctx) {
  return [keyOf(ctx), param(ctx, 'collection'), param(ctx, 'id')] as const;
}

export function registerTrashRoutes(router: FolioRouter): void {
  route(router, listTrash, async (ctx) => {
    ctx.body = await ctx.services.trash.list(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });

  route(router, readTrashed, async (ctx) => {
    ctx.body = await ctx.services.trash.get(...entryAt(ctx));
  });

  route(router, restoreTrashed, async (ctx) => {
    const doc = await ctx.services.trash.restore(...entryAt(ctx));
    ctx.status = 201;
    ctx.set('ETag', `"${doc.$version}"`);
    ctx.set('X-Document-Version', String(doc.$version));
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/${encodeURIComponent(doc._id)}`);
    ctx.body = doc;
  });

  route(router, eraseTrashed, async (ctx) => {
    await ctx.services.trash.purge(...entryAt(ctx));
    ctx.status = 204;
  });
}
