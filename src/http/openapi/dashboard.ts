/**
 * What Folio adds for its dashboard: the page's files, and the data routes again under
 * `/api/data/{env}` authenticated by session (derived from the keyed declarations, so both stay
 * alike). The session, plans and collections routes are declared beside their routes.
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathItemObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { requestIdHeader } from './components.js';
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
    const copy: ZodOpenApiPathItemObject = {};
    for (const method of METHODS) {
      const op = item[method];
      if (op) copy[method] = bySession(op);
    }
    mirror[`/api/data/{env}${path}`] = copy;
  }
  return mirror;
}

const file = z.object({ file: z.string().meta({ description: 'A file name.' }) });
const fileHeaders = requestIdHeader.extend({
  ETag: z.string().meta({ header: { id: 'ETag' } }),
  'Cache-Control': z.literal('no-cache'),
});
const dashboardFile = {
  '200': {
    description: 'The file (ETag; `Cache-Control: no-cache`)',
    headers: fileHeaders,
    content: {
      'text/html': { schema: z.string() },
      'text/javascript': { schema: z.string() },
      'text/css': { schema: z.string() },
      'image/svg+xml': { schema: z.string() },
      'image/png': { schema: z.string() },
    },
  },
  '304': { description: 'Not modified', headers: fileHeaders },
  ...errors([400, 404, 500]),
};

// The dashboard's files are for browsers: declared here, served by dashboard/routes.ts.
export const DASHBOARD_PATHS: ZodOpenApiPathsObject = {
  '/dashboard': {
    get: {
      operationId: 'dashboardPage',
      tags: ['dashboard'],
      summary: 'The dashboard page (`/dashboard` redirects to `/dashboard/`)',
      security: [],
      responses: {
        '200': {
          description: 'HTML',
          headers: requestIdHeader,
          content: { 'text/html': { schema: z.string() } },
        },
        '304': { description: 'Not modified (`/dashboard/`, the page itself)', headers: fileHeaders },
        '308': {
          description: 'To /dashboard/',
          headers: requestIdHeader.extend({ Location: z.literal('/dashboard/') }),
        },
        ...errors([400, 500]),
      },
    },
  },
  '/dashboard/{file}': {
    get: {
      operationId: 'dashboardFile',
      tags: ['dashboard'],
      summary: 'A file of the dashboard',
      security: [],
      requestParams: { path: file },
      responses: dashboardFile,
    },
  },
  '/dashboard/{folder}/{file}': {
    get: {
      operationId: 'dashboardFolderFile',
      tags: ['dashboard'],
      summary: 'A file of the dashboard in a folder',
      security: [],
      requestParams: { path: file.extend({ folder: z.string().meta({ description: 'A folder name.' }) }) },
      responses: dashboardFile,
    },
  },
};
