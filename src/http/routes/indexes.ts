/**
 * Declared indexes of a collection under `/{ns}/{collection}/_indexes`. Registered before the
 * document routes, so `_indexes` is never read as a document id (client ids cannot start with `_`).
 * Read-only keys may list (the key middleware limits them to GET).
 */
import { createIndexSchema } from '../../services/indexes.js';
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { type FolioRouter, keyOf, param } from '../types.js';
import { parseBody } from './parseBody.js';

const BASE = '/:ns/:collection/_indexes';

export function registerIndexRoutes(router: FolioRouter): void {
  const body = jsonBody([JSON_TYPE], 16 * 1024);

  router.get(BASE, async (ctx) => {
    ctx.body = { data: await ctx.services.indexes.list(keyOf(ctx), param(ctx, 'collection')) };
  });

  router.post(BASE, body, async (ctx) => {
    const input = parseBody(createIndexSchema, ctx.request.body);
    const index = await ctx.services.indexes.create(keyOf(ctx), param(ctx, 'collection'), input);
    ctx.status = 201;
    ctx.set(
      'Location',
      `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/_indexes/${encodeURIComponent(index.name)}`,
    );
    ctx.body = index;
  });

  router.delete(`${BASE}/:name`, async (ctx) => {
    await ctx.services.indexes.drop(keyOf(ctx), param(ctx, 'collection'), param(ctx, 'name'));
    ctx.status = 204;
  });
}
