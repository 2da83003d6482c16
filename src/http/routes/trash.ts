/**
 * A collection's trash under `/{ns}/{collection}/_trash`: list, read one with its history,
 * restore, erase. Registered before the document routes, so `_trash` is never read as a
 * document id (client ids cannot start with `_`). Read-only keys may list and read.
 */
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';

const BASE = '/:ns/:collection/_trash';

function entryAt(ctx: Ctx) {
  return [keyOf(ctx), param(ctx, 'collection'), param(ctx, 'id')] as const;
}

export function registerTrashRoutes(router: FolioRouter): void {
  router.get(BASE, async (ctx) => {
    ctx.body = await ctx.services.trash.list(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });

  router.get(`${BASE}/:id`, async (ctx) => {
    ctx.body = await ctx.services.trash.get(...entryAt(ctx));
  });

  router.post(`${BASE}/:id/restore`, async (ctx) => {
    const doc = await ctx.services.trash.restore(...entryAt(ctx));
    ctx.status = 201;
    ctx.set('ETag', `"${doc.$version}"`);
    ctx.set('X-Document-Version', String(doc.$version));
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/${encodeURIComponent(doc._id)}`);
    ctx.body = doc;
  });

  router.delete(`${BASE}/:id`, async (ctx) => {
    await ctx.services.trash.purge(...entryAt(ctx));
    ctx.status = 204;
  });
}
