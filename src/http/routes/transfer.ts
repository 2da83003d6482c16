/**
 * Import, export and bulk under `/{ns}/{collection}/_import|_export|_bulk`. Registered before
 * the document routes so `_export` is never read as a document id (ids cannot start with `_`).
 */
import type { Middleware } from 'koa';
import { AppError, notAcceptable, unsupportedMediaType } from '../../errors.js';
import { MEDIA_TYPES, type TransferFormat } from '../../formats/formats.js';
import { ImportInterrupted } from '../../services/imports/importer.js';
import { parseImportOptions } from '../../services/imports/importRules.js';
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { type Ctx, type FolioContext, type FolioRouter, type FolioState, keyOf, param } from '../types.js';

/** Import media types; `application/ndjson` and `application/jsonl` are common spellings too. */
const IMPORT_TYPES: ReadonlyArray<[string, TransferFormat]> = [
  [MEDIA_TYPES.json, 'json'],
  [MEDIA_TYPES.csv, 'csv'],
  [MEDIA_TYPES.ndjson, 'ndjson'],
  ['application/ndjson', 'ndjson'],
  ['application/jsonl', 'ndjson'],
];
const EXPORT_TYPES = [MEDIA_TYPES.json, MEDIA_TYPES.csv, MEDIA_TYPES.ndjson];

function importFormat(ctx: Ctx): TransferFormat {
  const encoding = ctx.get('Content-Encoding');
  if (encoding !== '' && encoding.toLowerCase() !== 'identity') {
    throw new AppError(
      415,
      'unsupported_media_type',
      'Imports take an uncompressed body (no Content-Encoding).',
    );
  }
  const matched = ctx.is(...IMPORT_TYPES.map(([type]) => type));
  const format = IMPORT_TYPES.find(([type]) => type === matched)?.[1];
  if (!format) throw unsupportedMediaType(IMPORT_TYPES.map(([type]) => type));
  return format;
}

/** The bulk body parser for the caller's plan: a bulk body is bounded like an import body. */
function bulkBody(): Middleware<FolioState, FolioContext> {
  const parsers = new Map<number, Middleware<FolioState, FolioContext>>();
  return async (ctx, next) => {
    const max = keyOf(ctx as Ctx).limits.maxImportBytes;
    let parse = parsers.get(max);
    if (!parse) {
      parse = jsonBody([JSON_TYPE], max);
      parsers.set(max, parse);
    }
    await parse(ctx, next);
  };
}

export function registerTransferRoutes(router: FolioRouter): void {
  router.post('/:ns/:collection/_import', async (ctx) => {
    const key = keyOf(ctx);
    // Every answer says what this key's plan takes, so a client can size its parts.
    ctx.set('X-Import-Max-Documents', String(key.limits.maxImportDocuments));
    ctx.set('X-Import-Max-Bytes', String(key.limits.maxImportBytes));
    const { imports } = ctx.services;
    try {
      const format = importFormat(ctx);
      const options = parseImportOptions(ctx.query);
      imports.assertDeclaredSize(key, ctx.request.length);
      ctx.body = await imports.import(key, param(ctx, 'collection'), format, ctx.req, options);
    } catch (error) {
      // Refused before the body was read to its end: do not wait for (or read) the rest.
      if (!ctx.req.complete) ctx.set('Connection', 'close');
      if (error instanceof ImportInterrupted) ctx.log.error({ err: error.cause }, 'import interrupted');
      throw error;
    }
  });

  router.get('/:ns/:collection/_export', async (ctx) => {
    const type = ctx.accepts(...EXPORT_TYPES);
    const format = (['json', 'csv', 'ndjson'] as const).find((f) => MEDIA_TYPES[f] === type);
    if (!format) throw notAcceptable(EXPORT_TYPES);
    const result = await ctx.services.exports.export(keyOf(ctx), param(ctx, 'collection'), format, ctx.query);
    ctx.set('Content-Disposition', `attachment; filename="${result.filename}"`);
    ctx.set('X-Total-Count', String(result.count));
    ctx.type = result.contentType;
    result.body.once('error', (err) => ctx.log.error({ err }, 'export stream failed'));
    ctx.body = result.body;
  });

  router.post('/:ns/:collection/_bulk', bulkBody(), async (ctx) => {
    ctx.status = 207;
    ctx.body = await ctx.services.bulk.run(keyOf(ctx), param(ctx, 'collection'), ctx.request.body);
  });
}
