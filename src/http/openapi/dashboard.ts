/**
 * What Folio adds for its dashboard: the page's files, the session, the plans, a project's
 * collections, and the data routes again under `/api/data/{env}` authenticated by session
 * (derived from the keyed operations, so both stay alike).
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathItemObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { planLimitsSchema } from '../../config/schema.js';
import { accountSchema } from './components.js';
import { errors, json, PATHS, session } from './operations.js';

const env = z.enum(['live', 'test']).meta({ description: 'The project environment whose data to use.' });

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** A keyed operation as the session-authenticated mirror answers it. */
function bySession(op: ZodOpenApiOperationObject): ZodOpenApiOperationObject {
  const path = op.requestParams?.path as z.ZodObject | undefined;
  return {
    ...op,
    tags: ['dashboard data'],
    summary: `${op.summary ?? ''} (by session)`,
    description:
      'The data route of the same path after `/api/data/{env}`, authenticated by the project owner’s session instead of an API key; with the cookie, writes need `X-CSRF-Token`. Counted against the plan’s rate limit per account.',
    security: [{ session: [] }, { sessionCookie: [] }],
    requestParams: { ...op.requestParams, path: z.object({ env, ...(path?.shape ?? {}) }) },
  };
}

function sessionMirror(): ZodOpenApiPathsObject {
  const mirror: ZodOpenApiPathsObject = {};
  for (const [path, item] of Object.entries(PATHS)) {
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

const collectionInfo = z
  .object({ name: z.string(), documents: z.int().min(0) })
  .meta({ id: 'CollectionInfo' });
const file = z.object({ file: z.string() });
const dashboardFile = {
  '200': { description: 'The file (ETag; `Cache-Control: no-cache`)' },
  '304': { description: 'Not modified' },
  ...errors([404]),
};

export const DASHBOARD_PATHS: ZodOpenApiPathsObject = {
  '/dashboard': {
    get: {
      tags: ['dashboard'],
      summary: 'The dashboard page (`/dashboard` redirects to `/dashboard/`)',
      responses: { '200': { description: 'HTML' }, '308': { description: 'To /dashboard/' } },
    },
  },
  '/dashboard/{file}': {
    get: {
      tags: ['dashboard'],
      summary: 'A file of the dashboard',
      requestParams: { path: file },
      responses: dashboardFile,
    },
  },
  '/dashboard/{folder}/{file}': {
    get: {
      tags: ['dashboard'],
      summary: 'A file of the dashboard in a folder',
      requestParams: { path: file.extend({ folder: z.string() }) },
      responses: dashboardFile,
    },
  },
  '/api/auth/session': {
    get: session({
      tags: ['accounts'],
      summary: 'The signed-in account and the CSRF token cookie-authenticated writes must send',
      ok: {
        '200': {
          description: 'The session',
          content: json(z.object({ account: accountSchema, csrfToken: z.string() })),
        },
      },
      errors: [],
    }),
  },
  '/api/plans': {
    get: {
      tags: ['accounts'],
      summary: 'Every plan and its limits, as configured (no session needed)',
      responses: {
        '200': {
          description: 'Plans',
          content: json(
            z.object({
              plans: z.object({ free: planLimitsSchema, pro: planLimitsSchema, team: planLimitsSchema }),
            }),
          ),
        },
      },
    },
  },
  '/api/projects/{projectId}/collections': {
    get: session({
      tags: ['accounts'],
      summary: 'The collections of a project environment that hold documents, with their counts',
      requestParams: { path: z.object({ projectId: z.string() }), query: z.object({ env }) },
      ok: {
        '200': {
          description: 'Collections by name',
          content: json(z.object({ env, collections: z.array(collectionInfo) })),
        },
      },
      errors: [400, 403, 404],
    }),
  },
  ...sessionMirror(),
};
