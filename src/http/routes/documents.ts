/**
 * Documents and their history under `/{ns}/{collection}`. Each operation is declared here, beside
 * its handler (see route.ts); handlers parse, call one service function and shape the response;
 * auth, rate limits and scope checks ran in middleware.
 */
import { z } from 'zod';
import { filterParamSchema } from '../../query/filterParams.js';
import { listParamsSchema } from '../../query/listQuery.js';
import { parseIfMatch } from '../../services/documents.js';
import { parsePurge } from '../../services/trash/retention.js';
import { parseVersionNumber } from '../../services/versions.js';
import type { FolioDocument } from '../../store/port.js';
import { JSON_PATCH_TYPE, jsonBody, MERGE_PATCH_TYPE } from '../middleware/body.js';
import {
  collectionPath,
  countResponseSchema,
  diffSchema,
  documentBodySchema,
  documentPath,
  documentSchema,
  etagHeader,
  explainResponseSchema,
  ifMatch as ifMatchHeader,
  listResponseSchema,
  locationHeader,
  versionNumber,
  versionPath,
  versionRecordSchema,
} from '../openapi/components.js';
import { answer, bodyTypes, json, type OperationDeclaration } from '../openapi/declare.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';
import { declare, route } from './route.js';

const documentOk = (status: number, description: string, headers = etagHeader) =>
  answer(status, description, documentSchema, headers);

const key = { auth: 'key' } as const;

export const listDocuments = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}',
  operationId: 'listDocuments',
  tags: ['documents'],
  summary: 'List and query documents',
  description:
    'A page of documents. With `count=true` the answer is `{count}` (Count) and with `explain=true` `{plan}` (QueryPlan) instead; the typed client has `count()` and `explain()` for them, so its list answer is always a DocumentList.',
  params: collectionPath,
  query: listParamsSchema.extend({ filter: filterParamSchema }),
  ok: answer(
    200,
    'A page of documents, `{count}` with `count=true`, or `{plan}` with `explain=true`',
    z.union([listResponseSchema, countResponseSchema, explainResponseSchema]),
  ),
  errors: [400, 403],
});

export const createDocument = declare({
  ...key,
  method: 'post',
  path: '/{ns}/{collection}',
  operationId: 'createDocument',
  tags: ['documents'],
  summary: 'Create a document',
  params: collectionPath,
  body: { content: json(documentBodySchema) },
  ok: documentOk(201, 'Created', etagHeader.extend(locationHeader.shape)),
  errors: [400, 403, 409, 413, 415, 422],
});

export const readDocument = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/{id}',
  operationId: 'readDocument',
  tags: ['documents'],
  summary: 'Read a document',
  params: documentPath,
  ok: documentOk(200, 'The document'),
  errors: [403, 404],
});

export const replaceDocument = declare({
  ...key,
  method: 'put',
  path: '/{ns}/{collection}/{id}',
  operationId: 'replaceDocument',
  tags: ['documents'],
  summary: 'Replace a document (creates it when missing: 201)',
  params: documentPath,
  headers: ifMatchHeader,
  body: { content: json(documentBodySchema) },
  ok: { ...documentOk(200, 'Replaced'), ...documentOk(201, 'Created') },
  errors: [400, 403, 409, 412, 413, 415, 422],
});

export const jsonPatchSchema = z
  .array(
    z.object({
      op: z.enum(['add', 'remove', 'replace', 'move', 'copy', 'test']),
      path: z.string(),
      from: z.string().optional(),
      value: z.unknown().optional(),
    }),
  )
  .max(1000)
  .meta({ id: 'JsonPatch', description: 'RFC 6902: operations applied in order, all or none.' });

export const patchDocument = declare({
  ...key,
  method: 'patch',
  path: '/{ns}/{collection}/{id}',
  operationId: 'patchDocument',
  tags: ['documents'],
  summary: 'Patch a document: RFC 7396 merge patch or RFC 6902 JSON patch',
  params: documentPath,
  headers: ifMatchHeader,
  body: {
    content: {
      [MERGE_PATCH_TYPE]: { schema: documentBodySchema },
      [JSON_PATCH_TYPE]: { schema: jsonPatchSchema },
    },
  },
  ok: documentOk(200, 'Patched'),
  errors: [400, 403, 404, 409, 412, 413, 415, 422],
});

export const deleteDocument = declare({
  ...key,
  method: 'delete',
  path: '/{ns}/{collection}/{id}',
  operationId: 'deleteDocument',
  tags: ['documents'],
  summary:
    'Delete a document: it moves to the collection’s trash with its history (plan retention); `purge=true` erases it for good at once',
  params: documentPath,
  headers: ifMatchHeader,
  query: z.object({
    purge: z
      .enum(['true', 'false'])
      .optional()
      .meta({ description: '`true`: erase the document and every version now, no trash.' }),
  }),
  ok: answer(204, 'Deleted'),
  errors: [400, 403, 404, 412],
});

export const listVersions = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/{id}/versions',
  operationId: 'listVersions',
  tags: ['versions'],
  summary: 'A document’s history, newest first',
  params: documentPath,
  ok: answer(200, 'Versions', z.object({ versions: z.array(versionRecordSchema) })),
  errors: [403, 404],
});

export const diffVersions = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/{id}/versions/diff',
  operationId: 'diffVersions',
  tags: ['versions'],
  summary: 'What changed between two versions (Pro and Team)',
  params: documentPath,
  query: z.object({ from: versionNumber, to: versionNumber }),
  ok: answer(200, 'Changes to user fields', diffSchema),
  errors: [400, 403, 404],
});

export const readVersion = declare({
  ...key,
  method: 'get',
  path: '/{ns}/{collection}/{id}/versions/{version}',
  operationId: 'readVersion',
  tags: ['versions'],
  summary: 'The document as it was at a version',
  params: versionPath,
  ok: documentOk(200, 'That version'),
  errors: [400, 403, 404],
});

export const restoreVersion = declare({
  ...key,
  method: 'post',
  path: '/{ns}/{collection}/{id}/versions/{version}/restore',
  operationId: 'restoreVersion',
  tags: ['versions'],
  summary: 'Restore a version as a new version',
  params: versionPath,
  headers: ifMatchHeader,
  ok: documentOk(
    200,
    'The new document version',
    etagHeader.extend({
      'X-Document-Version': z.int().meta({ description: 'The new `$version`.' }),
    }),
  ),
  errors: [400, 403, 404, 409, 412, 422],
});

/** This module's operations, for the OpenAPI document. */
export const DOCUMENT_OPERATIONS: OperationDeclaration[] = [
  listDocuments,
  createDocument,
  readDocument,
  replaceDocument,
  patchDocument,
  deleteDocument,
  listVersions,
  diffVersions,
  readVersion,
  restoreVersion,
];

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
  // The same types for create and replace; the Content-Types come from the declarations.
  const body = jsonBody(bodyTypes(createDocument), maxDocumentBytes);
  const patchBody = jsonBody(bodyTypes(patchDocument), maxDocumentBytes);
  const ifMatch = (ctx: Ctx) => parseIfMatch(ctx.get('If-Match') || undefined);

  route(router, listDocuments, async (ctx) => {
    ctx.body = await ctx.services.listing.list(keyOf(ctx), param(ctx, 'collection'), ctx.query);
  });

  route(router, createDocument, body, async (ctx) => {
    const doc = await ctx.services.documents.create(keyOf(ctx), param(ctx, 'collection'), ctx.request.body);
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/${encodeURIComponent(doc._id)}`);
    sendDocument(ctx, doc, 201);
  });

  route(router, readDocument, async (ctx) => {
    sendDocument(ctx, await ctx.services.documents.get(...documentAt(ctx)));
  });

  route(router, replaceDocument, body, async (ctx) => {
    const { doc, created } = await ctx.services.documents.replace(
      ...documentAt(ctx),
      ctx.request.body,
      ifMatch(ctx),
    );
    sendDocument(ctx, doc, created ? 201 : 200);
  });

  route(router, patchDocument, patchBody, async (ctx) => {
    const kind = ctx.is(JSON_PATCH_TYPE) ? 'json' : 'merge';
    const doc = await ctx.services.documents.patch(...documentAt(ctx), kind, ctx.request.body, ifMatch(ctx));
    sendDocument(ctx, doc);
  });

  route(router, deleteDocument, async (ctx) => {
    // `?purge=true`: erased at once instead of kept in the trash (docs/collections.md).
    const purge = parsePurge(ctx.query.purge);
    await ctx.services.documents.delete(...documentAt(ctx), ifMatch(ctx), { purge });
    ctx.status = 204;
  });

  route(router, listVersions, async (ctx) => {
    const versions = await ctx.services.versions.list(...documentAt(ctx));
    ctx.body = { versions };
  });

  // Registered before `/versions/:version` so "diff" is never read as a version number.
  route(router, diffVersions, async (ctx) => {
    const from = parseVersionNumber('from', single(ctx.query.from));
    const to = parseVersionNumber('to', single(ctx.query.to));
    ctx.body = await ctx.services.versions.diff(...documentAt(ctx), from, to);
  });

  route(router, readVersion, async (ctx) => {
    const version = parseVersionNumber('version', param(ctx, 'version'));
    const doc = await ctx.services.versions.get(...documentAt(ctx), version);
    sendDocument(ctx, doc);
  });

  route(router, restoreVersion, async (ctx) => {
    const version = parseVersionNumber('version', param(ctx, 'version'));
    const doc = await ctx.services.documents.restore(...documentAt(ctx), version, ifMatch(ctx));
    ctx.set('X-Document-Version', String(doc.$version));
    sendDocument(ctx, doc);
  });
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}
