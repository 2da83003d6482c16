/**
 * Documents and their history under `/{ns}/{collection}`. Handlers parse, call one service
 * function and shape the response; auth, rate limits and scope checks ran in middleware.
 */
import { parseIfMatch } from '../../services/documents.js';
import { parsePurge } from '../../services/trash/retention.js';
import { parseVersionNumber } from '../../services/versions.js';
import type { FolioDocument } from '../../store/port.js';
import { JSON_PATCH_TYPE, JSON_TYPE, jsonBody, MERGE_PATCH_TYPE } from '../middleware/body.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';

/** The caller, collection and document id a `/{ns}/{collection}/{id}...` route addresses. */
function documentAt(ctx: Ctx) {
  return [keyOf(ctx), param(ctx, 'collection'), param(ctx, 'id')] as const;
}

function sendDocument(ctx: Ctx, doc: FolioDocument, status = 200): void {
  ctx.status = status;
  ctx.set('ETag', `"${doc.$version}"`);
  ctx.body = doc;
}

export function registerDocumentRoutes(router: FolioRouter, maxDocumentBytes: number): void {
  const body = jsonBody([JSON_TYPE], maxDocumentBytes);
  const patchBody = jsonBody([MERGE_PATCH_TYPE, JSON_PATCH_TYPE], maxDocumentBytes);
  const ifMatch = (ctx: Ctx) => parseIfMatch(ctx.get('If-Match') || undefined);

  router.get('/:ns/:collection', async (ctx) => {
    ctx.body = await ctx.services.listing.list(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });

  router.post('/:ns/:collection', body, async (ctx) => {
    const doc = await ctx.services.documents.create(keyOf(ctx), param(ctx, 'collection'), ctx.request.body);
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/${encodeURIComponent(doc._id)}`);
    sendDocument(ctx, doc, 201);
  });

  router.get('/:ns/:collection/:id', async (ctx) => {
    // The stored text as is: no parse and re-stringify on the hottest route.
    const { json, version } = await ctx.services.documents.getJson(...documentAt(ctx));
    ctx.set('ETag', `"${version}"`);
    ctx.type = 'application/json';
    ctx.body = json;
  });

  router.put('/:ns/:collection/:id', body, async (ctx) => {
    const { doc, created } = await ctx.services.documents.replace(
      ...documentAt(ctx),
      ctx.request.body,
      ifMatch(ctx),
    );
    sendDocument(ctx, doc, created ? 201 : 200);
  });

  router.patch('/:ns/:collection/:id', patchBody, async (ctx) => {
    const kind = ctx.is(JSON_PATCH_TYPE) ? 'json' : 'merge';
    const doc = await ctx.services.documents.patch(...documentAt(ctx), kind, ctx.request.body, ifMatch(ctx));
    sendDocument(ctx, doc);
  });

  router.delete('/:ns/:collection/:id', async (ctx) => {
    // `?purge=true`: erased at once instead of kept in the trash (docs/collections.md).
    const purge = parsePurge(ctx.query.purge);
    await ctx.services.documents.delete(...documentAt(ctx), ifMatch(ctx), { purge });
    ctx.status = 204;
  });

  router.get('/:ns/:collection/:id/versions', async (ctx) => {
    const versions = await ctx.services.versions.list(...documentAt(ctx));
    ctx.body = { versions };
  });

  // Registered before `/versions/:version` so "diff" is never read as a version number.
  router.get('/:ns/:collection/:id/versions/diff', async (ctx) => {
    const from = parseVersionNumber('from', single(ctx.query.from));
    const to = parseVersionNumber('to', single(ctx.query.to));
    ctx.body = await ctx.services.versions.diff(...documentAt(ctx), from, to);
  });

  router.get('/:ns/:collection/:id/versions/:version', async (ctx) => {
    const version = parseVersionNumber('version', param(ctx, 'version'));
    const doc = await ctx.services.versions.get(...documentAt(ctx), version);
    sendDocument(ctx, doc);
  });

  router.post('/:ns/:collection/:id/versions/:version/restore', async (ctx) => {
    const version = parseVersionNumber('version', param(ctx, 'version'));
    const doc = await ctx.services.documents.restore(...documentAt(ctx), version, ifMatch(ctx));
    ctx.set('X-Document-Version', String(doc.$version));
    sendDocument(ctx, doc);
  });
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}
