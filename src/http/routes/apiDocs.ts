/**
 * The API describes itself: `GET /openapi.json` (OpenAPI 3.1, generated from the zod schemas)
 * and `GET /docs`, a reference page rendered by Swagger UI served from the installed npm package
 * (no CDN: Folio may run offline).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { notFound } from '../../errors.js';
import { FOLIO_VERSION } from '../../version.js';
import { buildOpenApiDocument } from '../openapi/document.js';
import { type FolioRouter, param } from '../types.js';

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

export function registerApiDocRoutes(router: FolioRouter): void {
  let document: string | undefined;
  router.get('/openapi.json', (ctx) => {
    document ??= JSON.stringify(buildOpenApiDocument(FOLIO_VERSION));
    ctx.type = 'application/json';
    ctx.body = document;
  });

  router.get('/docs', (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });

  router.get('/docs/assets/:file', async (ctx) => {
    const file = param(ctx, 'file');
    const type = ASSETS.get(file);
    if (!type) throw notFound('File');
    ctx.type = type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = await readFile(path.join(SWAGGER_DIR, file));
  });
}
