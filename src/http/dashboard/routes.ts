/**
 * `GET /dashboard/...`: the dashboard's files from memory (assets.ts), with a strong ETag and
 * `Cache-Control: no-cache`, so browsers revalidate (304) and an upgrade is seen at once; pages
 * carry a strict Content-Security-Policy. The dashboard routes itself inside the page (`#/...`),
 * so every other path below `/dashboard/` is a JSON 404 like any unknown route. The client
 * library is served among its files (`/dashboard/client/folio.js`, clientLibrary.ts).
 */
import { Router } from '@koa/router';
import { z } from 'zod';
import { notFound } from '../../errors.js';
import { requestIdHeader } from '../openapi/components.js';
import type { OperationDeclaration } from '../openapi/declare.js';
import { declare, route } from '../routes/route.js';
import { type Ctx, type FolioContext, type FolioRouter, type FolioState, param } from '../types.js';
import type { DashboardAssets } from './assets.js';
import { withClientLibrary } from './clientLibrary.js';

const tags = ['dashboard'];
const file = z.object({ file: z.string().meta({ description: 'A file name.' }) });
const fileHeaders = z.object({
  ETag: z.string().meta({ header: { id: 'ETag' } }),
  'Cache-Control': z.literal('no-cache'),
  'X-Content-Type-Options': z.literal('nosniff'),
  // Pages only.
  'Content-Security-Policy': z.string().optional().meta({ description: 'On pages: a strict policy.' }),
  'X-Frame-Options': z.literal('DENY').optional().meta({ description: 'On pages.' }),
  'Referrer-Policy': z.literal('same-origin').optional().meta({ description: 'On pages.' }),
});
const html = { 'text/html': { schema: z.string() } };
const fileAnswers = {
  '200': {
    description: 'The file (ETag; `Cache-Control: no-cache`)',
    headers: fileHeaders,
    content: {
      ...html,
      'text/javascript': { schema: z.string() },
      'text/css': { schema: z.string() },
      'image/svg+xml': { schema: z.string() },
      'image/png': { schema: z.string() },
    },
  },
  '304': { description: 'Not modified', headers: fileHeaders },
};

export const dashboardPage = declare({
  auth: 'public',
  method: 'get',
  path: '/dashboard',
  operationId: 'dashboardPage',
  tags,
  summary: 'The dashboard page (`/dashboard` redirects to `/dashboard/`)',
  ok: {
    '200': { description: 'The page (`/dashboard/`)', headers: fileHeaders, content: html },
    '304': { description: 'Not modified (`/dashboard/`)', headers: fileHeaders },
    '308': {
      description: 'To /dashboard/',
      headers: requestIdHeader.extend({ Location: z.literal('/dashboard/') }),
      content: { ...html, 'text/plain': { schema: z.string() } },
    },
  },
  errors: [],
});

export const dashboardFile = declare({
  auth: 'public',
  method: 'get',
  path: '/dashboard/{file}',
  operationId: 'dashboardFile',
  tags,
  summary: 'A file of the dashboard',
  params: file,
  ok: fileAnswers,
  errors: [404],
});

export const dashboardFolderFile = declare({
  auth: 'public',
  method: 'get',
  path: '/dashboard/{folder}/{file}',
  operationId: 'dashboardFolderFile',
  tags,
  summary: 'A file of the dashboard in a folder',
  params: file.extend({ folder: z.string().meta({ description: 'A folder name.' }) }),
  ok: fileAnswers,
  errors: [404],
});

export const DASHBOARD_OPERATIONS: OperationDeclaration[] = [
  dashboardPage,
  dashboardFile,
  dashboardFolderFile,
];

export function createDashboardRouter(dashboardAssets: DashboardAssets): FolioRouter {
  const router = new Router<FolioState, FolioContext>();
  // `/dashboard/client/folio.js`: the client library, for pages to import by URL.
  const assets = withClientLibrary(dashboardAssets);

  // Relative module URLs in the page resolve against /dashboard/, so the bare path redirects.
  route(router, dashboardPage, (ctx) => {
    if (ctx.path === '/dashboard/') return send(ctx, assets, 'index.html');
    ctx.status = 308;
    ctx.redirect('/dashboard/');
  });
  route(router, dashboardFile, (ctx) => send(ctx, assets, param(ctx, 'file')));
  route(router, dashboardFolderFile, (ctx) =>
    send(ctx, assets, `${param(ctx, 'folder')}/${param(ctx, 'file')}`),
  );
  return router;
}

function send(ctx: Ctx, assets: DashboardAssets, path: string): void {
  const file = assets.files.get(path);
  if (!file) throw notFound('Dashboard file');
  ctx.status = 200;
  ctx.type = file.type;
  ctx.set('ETag', file.etag);
  ctx.set('Cache-Control', 'no-cache');
  ctx.set('X-Content-Type-Options', 'nosniff');
  if (file.type.startsWith('text/html')) {
    ctx.set('Content-Security-Policy', assets.contentSecurityPolicy);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'same-origin');
  }
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = file.body;
}
