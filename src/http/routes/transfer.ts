/**
 * Import, export and bulk under `/{ns}/{collection}/_import|_export|_bulk`. Registered before
 * the document routes so `_export` is never read as a document id (ids cannot start with `_`).
 */

import type { Middleware } from 'koa';
import { z } from 'zod';
import { AppError, notAcceptable, unsupportedMediaType } from '../../errors.js';
import { MEDIA_TYPES, type TransferFormat } from '../../formats/formats.js';
import { filterParamSchema } from '../../query/filterParams.js';
import { listParamsSchema } from '../../query/listQuery.js';
import { bulkEnvelopeSchema } from '../../services/bulk.js';
import { formulaEscapeSchema } from '../../services/exports/exporter.js';
import { ImportInterrupted } from '../../services/imports/importer.js';
import { importQuerySchema, parseImportOptions } from '../../services/imports/importRules.js';
import { jsonBody } from '../middleware/body.js';
import {
  bulkResultSchema,
  collectionPath,
  documentBodySchema,
  documentSchema,
  importResultSchema,
} from '../openapi/components.js';
import { answer, bodyTypes, json, type OperationDeclaration } from '../openapi/declare.js';
import { closeAfterLingering, drainRequest } from '../requestDrain.js';
import { type Ctx, type FolioContext, type FolioRouter, type FolioState, keyOf, param } from '../types.js';
import { declare, route } from './route.js';

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
      // Each operation stands alone, `__proto__` in one's body included (refused as that one's 400).
      parse = jsonBody(bodyTypes(bulkDocuments), max, { protoKeys: 'keep' });
      parsers.set(max, parse);
    }
    await parse(ctx, next);
  };
}

const importLimits = z.object({
  'X-Import-Max-Documents': z.int().meta({ description: 'Records one import of this key’s plan takes.' }),
  'X-Import-Max-Bytes': z.int().meta({ description: 'Bytes one import body of this key’s plan takes.' }),
});

export const importDocuments = declare({
  auth: 'key',
  method: 'post',
  path: '/{ns}/{collection}/_import',
  operationId: 'importDocuments',
  tags: ['transfer'],
  summary: 'Import documents from a JSON array, CSV (header row) or NDJSON body',
  params: collectionPath,
  query: importQuerySchema,
  // The body is streamed to the importer, which reads it by format: no parser, no `validate`.
  body: {
    content: {
      [MEDIA_TYPES.json]: { schema: z.array(documentBodySchema) },
      [MEDIA_TYPES.csv]: { schema: z.string() },
      [MEDIA_TYPES.ndjson]: { schema: z.string() },
      'application/ndjson': { schema: z.string() },
      'application/jsonl': { schema: z.string() },
    },
  },
  ok: answer(200, 'What was imported, skipped and refused (per record)', importResultSchema, importLimits),
  errors: [400, 403, 409, 413, 415, 503],
});

export const exportDocuments = declare({
  auth: 'key',
  method: 'get',
  path: '/{ns}/{collection}/_export',
  operationId: 'exportDocuments',
  tags: ['transfer'],
  summary: 'Export documents as JSON, CSV or NDJSON (by Accept), streamed; the listing’s filters and sort',
  params: collectionPath,
  query: z.object({
    sort: listParamsSchema.shape.sort,
    filter: filterParamSchema,
    formulaEscape: formulaEscapeSchema,
  }),
  ok: {
    '200': {
      description: 'The documents; `Content-Disposition` names a file',
      content: {
        [MEDIA_TYPES.json]: { schema: z.array(documentSchema) },
        [MEDIA_TYPES.csv]: { schema: z.string() },
        [MEDIA_TYPES.ndjson]: { schema: z.string() },
      },
      headers: z.object({
        'Content-Disposition': z.string().meta({ description: '`attachment; filename="..."`' }),
        'X-Total-Count': z.int().meta({ description: 'Documents in the export.' }),
      }),
    },
  },
  errors: [400, 403],
});

export const bulkDocuments = declare({
  auth: 'key',
  method: 'post',
  path: '/{ns}/{collection}/_bulk',
  operationId: 'bulkDocuments',
  tags: ['transfer'],
  summary: 'Several document operations, each alone and in order',
  params: collectionPath,
  body: { content: json(bulkEnvelopeSchema) },
  ok: answer(
    207,
    'One result per operation, in order; every successful one is on disk when this answers',
    bulkResultSchema,
  ),
  errors: [400, 403, 413, 415],
});

export const TRANSFER_OPERATIONS: OperationDeclaration[] = [importDocuments, exportDocuments, bulkDocuments];

/** How much of a refused import body is still read (see requestDrain.ts). */
const DRAIN_MAX_BYTES = 8 * 1024 * 1024;
const DRAIN_MAX_MS = 5000;

export function registerTransferRoutes(router: FolioRouter): void {
  route(router, importDocuments, async (ctx) => {
    const key = keyOf(ctx);
    // Every answer says what this key's plan takes, so a client can size its parts.
    ctx.set('X-Import-Max-Documents', String(key.limits.maxImportDocuments));
    ctx.set('X-Import-Max-Bytes', String(key.limits.maxImportBytes));
    const { imports } = ctx.services;
    try {
      const format = importFormat(ctx);
      const options = parseImportOptions(ctx.query);
      imports.assertDeclaredSize(key, ctx.request.length);
      // An import refused mid-body stops reading; the default iterator would then destroy the
      // request, and with it the socket the refusal is being written to.
      const body = ctx.req.iterator({ destroyOnReturn: false }) as AsyncIterable<Uint8Array>;
      ctx.body = await imports.import(key, param(ctx, 'collection'), format, body, options);
    } catch (error) {
      // Refused before the body was read to its end: read a bounded rest so the client can
      // finish sending and read the refusal; past the bound (or a declared length beyond it, as
      // a 413 for a too-large Content-Length), answer at once, and close the connection after
      // dropping a bounded amount more of what the client still sends (requestDrain.ts).
      if (!ctx.req.complete) {
        const declared = ctx.request.length ?? 0;
        const drained =
          declared <= DRAIN_MAX_BYTES && (await drainRequest(ctx.req, DRAIN_MAX_BYTES, DRAIN_MAX_MS));
        if (!drained) closeAfterLingering(ctx.req, ctx.res, DRAIN_MAX_BYTES, DRAIN_MAX_MS);
      }
      if (error instanceof ImportInterrupted) ctx.log.error({ err: error.cause }, 'import interrupted');
      throw error;
    }
  });

  route(router, exportDocuments, async (ctx) => {
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

  route(router, bulkDocuments, bulkBody(), async (ctx) => {
    ctx.status = 207;
    ctx.body = await ctx.services.bulk.run(keyOf(ctx), param(ctx, 'collection'), ctx.request.body);
  });
}
