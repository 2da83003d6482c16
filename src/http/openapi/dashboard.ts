/**
 * The data routes again under `/api/data/{env}` for the dashboard, authenticated by session:
 * derived from the keyed declarations, as the routes are registered from the same modules, so
 * both stay alike. The dashboard's files are declared beside their routes (dashboard/routes.ts).
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathItemObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { errors } from './declare.js';

const env = z.enum(['live', 'test']).meta({ description: 'The project environment whose data to use.' });

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** A keyed operation as the session-authenticated mirror answers it. */
function bySession(op: ZodOpenApiOperationObject): ZodOpenApiOperationObject {
  const path = op.requestParams?.path as z.ZodObject | undefined;
  return {
    ...op,
    operationId: `${op.operationId ?? 'operation'}BySession`,
    tags: ['dashboard data'],
    summary: `${op.summary ?? ''} (by session)`,
    description:
      'The data route of the same path after `/api/data/{env}`, authenticated by the project owner’s session instead of an API key; with the cookie, writes need `X-CSRF-Token`. Counted against the plan’s rate limit per account.',
    security: [{ session: [] }, { sessionCookie: [] }],
    requestParams: { ...op.requestParams, path: z.object({ env, ...(path?.shape ?? {}) }) },
    // Refused by the session check (401; 403 without the CSRF token; 404 for a project the
    // account does not own) before any rate limit was counted: no rate-limit headers then.
    responses: { ...op.responses, ...errors([401, 403, 404]) },
  };
}

/** `/api/data/{env}/{ns}/...` for every keyed path of `paths`. */
export function sessionMirror(paths: ZodOpenApiPathsObject): ZodOpenApiPathsObject {
  const mirror: ZodOpenApiPathsObject = {};
  for (const [path, item] of Object.entries(paths)) {
    if (!path.startsWith('/{ns}/')) continue;
    // Stream tickets stand in for a key in a browser; the dashboard's streams use its session.
    if (path.endsWith('/_stream/tickets')) continue;
    const copy: ZodOpenApiPathItemObject = {};
    for (const method of METHODS) {
      const op = item[method];
      if (op) copy[method] = bySession(op);
    }
    mirror[`/api/data/{env}${path}`] = copy;
  }
  return mirror;
}
