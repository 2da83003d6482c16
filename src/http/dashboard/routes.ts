/**
 * `GET /dashboard/...`: the dashboard's files from memory (assets.ts), with a strong ETag and
 * `Cache-Control: no-cache`, so browsers revalidate (304) and an upgrade is seen at once; pages
 * carry a strict Content-Security-Policy. The dashboard routes itself inside the page (`#/...`),
 * so every other path below `/dashboard/` is a JSON 404 like any unknown route.
 */
import { Router } from '@koa/router';
import { notFound } from '../../errors.js';
import { type Ctx, type FolioContext, type FolioRouter, type FolioState, param } from '../types.js';
import type { DashboardAssets } from './assets.js';

export function createDashboardRouter(assets: DashboardAssets): FolioRouter {
  const router = new Router<FolioState, FolioContext>();

  // Relative module URLs in the page resolve against /dashboard/, so the bare path redirects.
  router.get('/dashboard', (ctx) => {
    if (ctx.path === '/dashboard/') return send(ctx, assets, 'index.html');
    ctx.status = 308;
    ctx.redirect('/dashboard/');
  });
  router.get('/dashboard/:file', (ctx) => send(ctx, assets, param(ctx, 'file')));
  router.get('/dashboard/:folder/:file', (ctx) =>
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
