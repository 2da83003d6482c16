/**
 * CORS, so browser front ends can call Folio with read-only keys. Keys travel in the
 * Authorization header, never in cookies, so an open origin is safe for the data routes;
 * `cors.origin` narrows it. The headers clients need to read are exposed.
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
  return cors({
    origin,
    exposeHeaders: EXPOSED,
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    maxAge: 600,
  }) as unknown as Middleware<FolioState, FolioContext>;
}
