/**
 * The API describes itself: `GET /openapi.json` (OpenAPI 3.1, generated from the zod schemas)
 * and `GET /docs`, a reference page rendered by Swagger UI served from the installed npm package
 * (no CDN: Folio may run offline).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';
import { notFound } from '../../errors.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import { type FolioRouter, param } from '../types.js';
import { declare, route } from './route.js';

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The only files served from the package, with their types: nothing else can be named. */
const ASSETS = new Map([
  ['swagger-ui.css', 'text/css; charset=utf-8'],
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['favicon-32x32.png', 'image/png'],
]);

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Folio API reference</title>
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <main id="reference"></main>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });</script>
</body>
</html>
`;

const tags = ['system'];

export const openApiDocument = declare({
  auth: 'public',
  method: 'get',
  path: '/openapi.json',
  operationId: 'openApiDocument',
  tags,
  summary: 'This document',
  ok: answer(
    200,
    'OpenAPI 3.1',
    z.record(z.string(), z.unknown()).meta({ description: 'An OpenAPI 3.1 document.' }),
  ),
  errors: [],
});

export const referencePage = declare({
  auth: 'public',
  method: 'get',
  path: '/docs',
  operationId: 'referencePage',
  tags,
  summary: 'The API reference page',
  ok: { '200': { description: 'HTML', content: { 'text/html': { schema: z.string() } } } },
  errors: [],
});

export const referenceAsset = declare({
  auth: 'public',
  method: 'get',
  path: '/docs/assets/{file}',
  operationId: 'referenceAsset',
  tags,
  summary: 'Files of the reference page',
  params: z.object({ file: z.string().meta({ description: 'A file name.' }) }),
  ok: {
    '200': {
      description: 'A file',
      content: Object.fromEntries(
        [...new Set(ASSETS.values())].map((type) => [type.split(';')[0]!, { schema: z.string() }]),
      ),
      headers: z.object({ 'Cache-Control': z.string() }),
    },
  },
  errors: [404],
});

export const API_DOC_OPERATIONS: OperationDeclaration[] = [openApiDocument, referencePage, referenceAsset];

/** `openApi`: the document (app.ts builds it: document.ts lists this module's routes). */
export function registerApiDocRoutes(router: FolioRouter, openApi: () => object): void {
  let document: string | undefined;
  route(router, openApiDocument, (ctx) => {
    document ??= JSON.stringify(openApi());
    ctx.type = 'application/json';
    ctx.body = document;
  });

  route(router, referencePage, (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  route(router, referenceAsset, async (ctx) => {
    const file = param(ctx, 'file');
    const type = ASSETS.get(file);
    if (!type) throw notFound('File');
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await readFile(path.join(SWAGGER_DIR, file));
  });
}
