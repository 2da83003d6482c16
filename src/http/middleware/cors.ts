/**
 * CORS, so browser front ends can call Folio with read-only keys. Preflights carry no key, so
 * this answers them for `cors.origin` (default any); the request itself then meets the key's
 * project policy (originPolicy.ts → services/origins.ts), which refuses read-write keys from pages
 * unless the project allows the origin. The headers clients need to read are exposed.
 */
import cors from '@koa/cors';
import type { Middleware } from 'koa';
import type { FolioContext, FolioState } from '../types.js';

const EXPOSED = [
  'ETag',
  'Location',
  'Retry-After',
  'X-Request-Id',
  'X-Document-Version',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
];

export function corsPolicy(origin: string): Middleware<FolioState, FolioContext> {
  const policy = cors({
    origin,
    exposeHeaders: EXPOSED,
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    // Content-Type covers the patch types (application/merge-patch+json, json-patch+json).
    allowHeaders: [
      'Authorization',
      'Content-Type',
      'Content-Encoding',
      'If-Match',
      'Last-Event-ID',
      'X-Request-Id',
    ],
    maxAge: 600,
  }) as unknown as Middleware<FolioState, FolioContext>;
  // Only browsers send Origin, and CORS headers mean nothing to any other client: a request
  // without one gets none (still `Vary: Origin`, so a cache keeps the two answers apart).
  return (ctx, next) => {
    if (ctx.req.headers.origin) return policy(ctx, next);
    // Nothing before this sets Vary; Koa's vary() would parse the (absent) header first.
    if (ctx.res.hasHeader('Vary')) ctx.vary('Origin');
    else ctx.res.setHeader('Vary', 'Origin');
    return next();
  };
}
