/**
 * The operations of the public API. Request schemas are the ones the routes validate with;
 * responses come from components.ts. `test/http/openapi.test.ts` checks that this list and the
 * routers agree, route for route.
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject, ZodOpenApiResponseObject } from 'zod-openapi';
import { filterParamSchema } from '../../query/filterParams.js';
import { listParamsSchema } from '../../query/listQuery.js';
import { credentialsSchema, projectNameSchema } from '../../services/accounts.js';
import { createKeySchema } from '../../services/apiKeys.js';
import { bulkEnvelopeSchema } from '../../services/bulk.js';
import { importQuerySchema } from '../../services/imports/importRules.js';
import { createIndexSchema } from '../../services/indexes.js';
import { projectSettingsSchema } from '../../services/projectSettings.js';
import { streamEventsParamSchema } from '../../services/streams/streamRequest.js';
import { registerWebhookSchema, updateWebhookSchema } from '../../services/webhooks/registrations.js';
import { planSchema, projectSchema as projectBodySchema } from '../routes/account.js';
import {
  accountSchema,
  apiKeySchema,
  bulkResultSchema,
  collection,
  countResponseSchema,
  deliverySchema,
  diffSchema,
  documentBodySchema,
  documentId,
  documentSchema,
  errorCodesOf,
  errorSchema,
  etagHeader,
  explainResponseSchema,
  importResultSchema,
  indexSchema,
  keyWithSecretSchema,
  listResponseSchema,
  ns,
  projectSchema,
  rateLimitHeaders,
  versionRecordSchema,
  webhookSchema,
  webhookWithSecretSchema,
} from './components.js';

/** Responses by status code. */
type Responses = Record<string, ZodOpenApiResponseObject>;

/**
 * One registered response per error status (and per header set), so the document and the typed
 * client generated from it refer to `components.responses` instead of repeating each error
 * response under every operation.
 */
const errorResponses = new Map<string, ZodOpenApiResponseObject>();

export function errors(statuses: number[], options: { keyed?: boolean } = {}): Responses {
  const out: Responses = {};
  for (const status of statuses) {
    const id = options.keyed ? `KeyedError${status}` : `Error${status}`;
    let response = errorResponses.get(id);
    if (!response) {
      response = {
        id,
        description: errorCodesOf(status),
        content: { 'application/json': { schema: errorSchema } },
        ...(options.keyed ? { headers: rateLimitHeaders } : {}),
      };
      errorResponses.set(id, response);
    }
    out[String(status)] = response;
  }
  return out;
}

export const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/** An operation on `/{ns}/...`: Bearer API key, rate-limit headers on every answer. */
function keyed(
  op: Omit<ZodOpenApiOperationObject, 'responses'> & { ok: Responses; errors: number[] },
): ZodOpenApiOperationObject {
  const { ok, errors: statuses, ...rest } = op;
  const withHeaders: Responses = {};
  for (const [status, response] of Object.entries(ok)) {
    withHeaders[status] = {
      ...response,
      headers: rateLimitHeaders.extend((response.headers as z.ZodObject | undefined)?.shape ?? {}),
    };
  }
  return {
    security: [{ apiKey: [] }],
    ...rest,
    responses: { ...withHeaders, ...errors([401, 429, ...statuses], { keyed: true }) },
  };
}

/** An operation on `/api/...` authenticated by a session (cookie or Bearer). */
export function session(
  op: Omit<ZodOpenApiOperationObject, 'responses'> & { ok: Responses; errors: number[] },
): ZodOpenApiOperationObject {
  const { ok, errors: statuses, ...rest } = op;
  return {
    security: [{ session: [] }, { sessionCookie: [] }],
    ...rest,
    responses: { ...ok, ...errors([401, ...statuses]) },
  };
}

const readinessSchema = z.object({
  status: z.enum(['ready', 'unavailable']),
  phase: z.enum(['starting', 'running', 'stopping']),
  checks: z.object({ store: z.boolean(), jobs: z.boolean(), webhookDispatcher: z.boolean() }),
});

const collectionPath = z.object({ ns, collection });
const documentPath = z.object({ ns, collection, id: documentId });
const versionPath = documentPath.extend({ version: z.string().regex(/^[1-9]\d{0,14}$/) });
const webhookPath = collectionPath.extend({ id: z.string().meta({ description: 'Webhook id (`wh_...`).' }) });
const ifMatch = z.object({
  'If-Match': z
    .string()
    .optional()
    .meta({ description: '`"<$version>"` (or `*`): write only if it is current; 412 otherwise.' }),
});
const documentOk = (status: number, description: string) => ({
  [String(status)]: { description, content: json(documentSchema), headers: etagHeader },
});

export const PATHS: ZodOpenApiPathsObject = {
  '/healthz': {
    get: {
      tags: ['system'],
      summary: 'Health: 200 while the store answers',
      responses: {
        '200': {
          description: 'Healthy',
          content: json(z.object({ status: z.literal('ok'), store: z.string() })),
        },
        '503': {
          description: 'The store does not answer',
          content: json(z.object({ status: z.string(), store: z.string() })),
        },
      },
    },
  },
  '/readyz': {
    get: {
      tags: ['system'],
      summary: 'Readiness: 200 only when started, not stopping, the store answers and background jobs run',
      responses: {
        '200': { description: 'Ready to take traffic', content: json(readinessSchema) },
        '503': {
          description: 'Starting, stopping, or a part is down (see `checks`)',
          content: json(readinessSchema),
        },
      },
    },
  },
  '/metrics': {
    get: {
      tags: ['system'],
      summary: 'Prometheus metrics (when `metrics.enabled`; the metrics token, never an API key)',
      security: [{ metricsToken: [] }],
      responses: {
        '200': {
          description: 'Prometheus text exposition format',
          content: { 'text/plain': { schema: z.string() } },
        },
        ...errors([401, 404]),
      },
    },
  },
  '/openapi.json': {
    get: { tags: ['system'], summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } },
  },
  '/docs': {
    get: {
      tags: ['system'],
      summary: 'The API reference page',
      responses: { '200': { description: 'HTML' } },
    },
  },
  '/docs/assets/{file}': {
    get: {
      tags: ['system'],
      summary: 'Files of the reference page',
      requestParams: { path: z.object({ file: z.string() }) },
      responses: { '200': { description: 'A file' }, ...errors([404]) },
    },
  },
  '/api/auth/signup': {
    post: {
      tags: ['accounts'],
      summary: 'Create an account (when signup is open)',
      requestBody: { required: true, content: json(credentialsSchema) },
      responses: {
        '201': {
          description: 'Created; sets the session cookie',
          content: json(z.object({ account: accountSchema, token: z.string(), csrfToken: z.string() })),
        },
        ...errors([400, 403, 409, 429]),
      },
    },
  },
  '/api/auth/login': {
    post: {
      tags: ['accounts'],
      summary: 'Log in; sets the session cookie',
      requestBody: { required: true, content: json(credentialsSchema) },
      responses: {
        '200': {
          description: 'Logged in',
          content: json(z.object({ token: z.string(), csrfToken: z.string() })),
        },
        ...errors([400, 401, 429]),
      },
    },
  },
  '/api/auth/logout': {
    post: session({
      tags: ['accounts'],
      summary: 'End the session',
      ok: { '204': { description: 'Logged out' } },
      errors: [],
    }),
  },
  '/api/account': {
    get: session({
      tags: ['accounts'],
      summary: 'The account',
      ok: { '200': { description: 'The account', content: json(accountSchema) } },
      errors: [],
    }),
    patch: session({
      tags: ['accounts'],
      summary: 'Change the plan (free in the pre-release phase)',
      requestBody: { required: true, content: json(planSchema) },
      ok: { '200': { description: 'The account', content: json(accountSchema) } },
      errors: [400],
    }),
  },
  '/api/projects': {
    get: session({
      tags: ['accounts'],
      summary: 'The account’s projects',
      ok: {
        '200': { description: 'Projects', content: json(z.object({ projects: z.array(projectSchema) })) },
      },
      errors: [],
    }),
    post: session({
      tags: ['accounts'],
      summary: 'Create a project',
      requestBody: { required: true, content: json(projectBodySchema) },
      ok: { '201': { description: 'Created', content: json(projectSchema) } },
      errors: [400, 409],
    }),
  },
  '/api/projects/{projectId}': {
    patch: session({
      tags: ['accounts'],
      summary: 'Project settings: allowed browser origins, automatic indexes',
      requestParams: { path: z.object({ projectId: z.string() }) },
      requestBody: { required: true, content: json(projectSettingsSchema) },
      ok: { '200': { description: 'The project', content: json(projectSchema) } },
      errors: [400, 403, 404],
    }),
  },
  '/api/keys': {
    post: session({
      tags: ['keys'],
      summary: 'Create an API key (the raw key is shown once)',
      requestBody: { required: true, content: json(createKeySchema) },
      ok: { '201': { description: 'Created', content: json(keyWithSecretSchema) } },
      errors: [400, 403, 404],
    }),
    get: session({
      tags: ['keys'],
      summary: 'A project’s keys, newest first',
      requestParams: { query: z.object({ project: projectNameSchema }) },
      ok: { '200': { description: 'Keys', content: json(z.object({ keys: z.array(apiKeySchema) })) } },
      errors: [400, 404],
    }),
  },
  '/api/keys/{keyId}': {
    delete: session({
      tags: ['keys'],
      summary: 'Revoke a key',
      requestParams: { path: z.object({ keyId: z.string() }) },
      ok: { '204': { description: 'Revoked' } },
      errors: [404],
    }),
  },
  '/api/keys/{keyId}/rotate': {
    post: session({
      tags: ['keys'],
      summary: 'Rotate a key: the old secret stops working at once',
      requestParams: { path: z.object({ keyId: z.string() }) },
      ok: { '201': { description: 'The new key', content: json(keyWithSecretSchema) } },
      errors: [404],
    }),
  },
  '/{ns}/{collection}': {
    get: keyed({
      tags: ['documents'],
      summary: 'List and query documents',
      requestParams: { path: collectionPath, query: listParamsSchema.extend({ filter: filterParamSchema }) },
      ok: {
        '200': {
          description: 'A page of documents, `{count}` with `count=true`, or `{plan}` with `explain=true`',
          content: json(z.union([listResponseSchema, countResponseSchema, explainResponseSchema])),
        },
      },
      errors: [400, 403],
    }),
    post: keyed({
      tags: ['documents'],
      summary: 'Create a document',
      requestParams: { path: collectionPath },
      requestBody: { required: true, content: json(documentBodySchema) },
      ok: documentOk(201, 'Created'),
      errors: [400, 403, 409, 413, 415],
    }),
  },
  '/{ns}/{collection}/{id}': {
    get: keyed({
      tags: ['documents'],
      summary: 'Read a document',
      requestParams: { path: documentPath },
      ok: documentOk(200, 'The document'),
      errors: [403, 404],
    }),
    put: keyed({
      tags: ['documents'],
      summary: 'Replace a document (creates it when missing: 201)',
      requestParams: { path: documentPath, header: ifMatch },
      requestBody: { required: true, content: json(documentBodySchema) },
      ok: { ...documentOk(200, 'Replaced'), ...documentOk(201, 'Created') },
      errors: [400, 403, 412, 413, 415],
    }),
    patch: keyed({
      tags: ['documents'],
      summary: 'Patch a document: RFC 7396 merge patch or RFC 6902 JSON patch',
      requestParams: { path: documentPath, header: ifMatch },
      requestBody: {
        required: true,
        content: {
          'application/merge-patch+json': { schema: documentBodySchema },
          'application/json-patch+json': {
            schema: z
              .array(
                z.object({
                  op: z.enum(['add', 'remove', 'replace', 'move', 'copy', 'test']),
                  path: z.string(),
                  from: z.string().optional(),
                  value: z.unknown().optional(),
                }),
              )
              .max(1000),
          },
        },
      },
      ok: documentOk(200, 'Patched'),
      errors: [400, 403, 404, 409, 412, 413, 415],
    }),
    delete: keyed({
      tags: ['documents'],
      summary: 'Delete a document and its history',
      requestParams: { path: documentPath, header: ifMatch },
      ok: { '204': { description: 'Deleted' } },
      errors: [403, 404, 412],
    }),
  },
  '/{ns}/{collection}/{id}/versions': {
    get: keyed({
      tags: ['versions'],
      summary: 'A document’s history, newest first',
      requestParams: { path: documentPath },
      ok: {
        '200': {
          description: 'Versions',
          content: json(z.object({ versions: z.array(versionRecordSchema) })),
        },
      },
      errors: [403],
    }),
  },
  '/{ns}/{collection}/{id}/versions/diff': {
    get: keyed({
      tags: ['versions'],
      summary: 'What changed between two versions (Pro and Team)',
      requestParams: {
        path: documentPath,
        query: z.object({ from: versionPath.shape.version, to: versionPath.shape.version }),
      },
      ok: { '200': { description: 'Changes to user fields', content: json(diffSchema) } },
      errors: [400, 403, 404],
    }),
  },
  '/{ns}/{collection}/{id}/versions/{version}': {
    get: keyed({
      tags: ['versions'],
      summary: 'The document as it was at a version',
      requestParams: { path: versionPath },
      ok: documentOk(200, 'That version'),
      errors: [400, 403, 404],
    }),
  },
  '/{ns}/{collection}/{id}/versions/{version}/restore': {
    post: keyed({
      tags: ['versions'],
      summary: 'Restore a version as a new version',
      requestParams: { path: versionPath, header: ifMatch },
      ok: {
        '200': {
          description: 'The new document version',
          content: json(documentSchema),
          headers: etagHeader.extend({ 'X-Document-Version': z.int() }),
        },
      },
      errors: [400, 403, 404, 412],
    }),
  },
  '/{ns}/{collection}/_indexes': {
    get: keyed({
      tags: ['indexes'],
      summary: 'The collection’s declared indexes and their state (read-only keys may list)',
      requestParams: { path: collectionPath },
      ok: { '200': { description: 'Indexes', content: json(z.object({ data: z.array(indexSchema) })) } },
      errors: [403],
    }),
    post: keyed({
      tags: ['indexes'],
      summary:
        'Declare an index and build it; the answer says `ready` or `failed` (a unique index over duplicates)',
      requestParams: { path: collectionPath },
      requestBody: { required: true, content: json(createIndexSchema) },
      ok: { '201': { description: 'Built (or failed: see `state`)', content: json(indexSchema) } },
      errors: [400, 403, 409, 415],
    }),
  },
  '/{ns}/{collection}/_indexes/{name}': {
    delete: keyed({
      tags: ['indexes'],
      summary: 'Drop a declared index',
      requestParams: {
        path: collectionPath.extend({ name: z.string().meta({ description: 'Index name.' }) }),
      },
      ok: { '204': { description: 'Dropped' } },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_webhooks': {
    post: keyed({
      tags: ['webhooks'],
      summary: 'Register a webhook (the only answer besides rotate-secret that shows the secret)',
      requestParams: { path: collectionPath },
      requestBody: { required: true, content: json(registerWebhookSchema) },
      ok: { '201': { description: 'Registered', content: json(webhookWithSecretSchema) } },
      errors: [400, 403, 415],
    }),
    get: keyed({
      tags: ['webhooks'],
      summary: 'The collection’s webhooks',
      requestParams: { path: collectionPath },
      ok: {
        '200': { description: 'Webhooks', content: json(z.object({ webhooks: z.array(webhookSchema) })) },
      },
      errors: [403],
    }),
  },
  '/{ns}/{collection}/_webhooks/{id}': {
    get: keyed({
      tags: ['webhooks'],
      summary: 'A webhook and its last deliveries, newest first',
      requestParams: { path: webhookPath },
      ok: {
        '200': {
          description: 'The webhook',
          content: json(webhookSchema.extend({ deliveries: z.array(deliverySchema) })),
        },
      },
      errors: [403, 404],
    }),
    patch: keyed({
      tags: ['webhooks'],
      summary: 'Change url, events, description or status (`active` re-enables and resets the failure count)',
      requestParams: { path: webhookPath },
      requestBody: { required: true, content: json(updateWebhookSchema) },
      ok: { '200': { description: 'The webhook', content: json(webhookSchema) } },
      errors: [400, 403, 404, 415],
    }),
    delete: keyed({
      tags: ['webhooks'],
      summary: 'Delete a webhook',
      requestParams: { path: webhookPath },
      ok: { '204': { description: 'Deleted' } },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_webhooks/{id}/test': {
    post: keyed({
      tags: ['webhooks'],
      summary: 'Send one `webhook.test` delivery now and answer with its record',
      requestParams: { path: webhookPath },
      ok: { '200': { description: 'The delivery', content: json(deliverySchema) } },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_webhooks/{id}/rotate-secret': {
    post: keyed({
      tags: ['webhooks'],
      summary: 'Replace the signing secret; the new one is shown once',
      requestParams: { path: webhookPath },
      ok: {
        '200': { description: 'The webhook with its new secret', content: json(webhookWithSecretSchema) },
      },
      errors: [403, 404],
    }),
  },
  '/{ns}/{collection}/_import': {
    post: keyed({
      tags: ['transfer'],
      summary: 'Import documents from a JSON array, CSV (header row) or NDJSON body',
      requestParams: { path: collectionPath, query: importQuerySchema },
      requestBody: {
        required: true,
        content: {
          'application/json': { schema: z.array(documentBodySchema) },
          'text/csv': { schema: z.string() },
          'application/x-ndjson': { schema: z.string() },
        },
      },
      ok: {
        '200': {
          description: 'What was imported, skipped and refused (per record)',
          content: json(importResultSchema),
          headers: z.object({ 'X-Import-Max-Documents': z.int(), 'X-Import-Max-Bytes': z.int() }),
        },
      },
      errors: [400, 403, 409, 413, 415, 503],
    }),
  },
  '/{ns}/{collection}/_export': {
    get: keyed({
      tags: ['transfer'],
      summary:
        'Export documents as JSON, CSV or NDJSON (by Accept), streamed; the listing’s filters and sort',
      requestParams: {
        path: collectionPath,
        query: z.object({ sort: listParamsSchema.shape.sort, filter: filterParamSchema }),
      },
      ok: {
        '200': {
          description: 'The documents; `Content-Disposition` names a file',
          content: {
            'application/json': { schema: z.array(documentSchema) },
            'text/csv': { schema: z.string() },
            'application/x-ndjson': { schema: z.string() },
          },
          headers: z.object({ 'Content-Disposition': z.string(), 'X-Total-Count': z.int() }),
        },
      },
      errors: [400, 403, 406],
    }),
  },
  '/{ns}/{collection}/_bulk': {
    post: keyed({
      tags: ['transfer'],
      summary: 'Several document operations, each alone and in order',
      requestParams: { path: collectionPath },
      requestBody: { required: true, content: json(bulkEnvelopeSchema) },
      ok: {
        '207': {
          description:
            'One result per operation, in order; every successful one is on disk when this answers',
          content: json(bulkResultSchema),
        },
      },
      errors: [400, 403, 413, 415],
    }),
  },
  '/{ns}/{collection}/_stream': {
    get: keyed({
      tags: ['streams'],
      summary: 'The collection’s changes as Server-Sent Events (Pro, Team), resumable with Last-Event-ID',
      requestParams: {
        path: collectionPath,
        query: z.object({ events: streamEventsParamSchema, filter: filterParamSchema }),
        header: z.object({
          Accept: z.literal('text/event-stream'),
          'Last-Event-ID': z
            .string()
            .optional()
            .meta({ description: 'Resume after this event (`evt_...`); events are kept 5 minutes.' }),
        }),
      },
      ok: {
        '200': {
          description:
            'An event stream: `event: document.created|updated|deleted`, `id: evt_<token>`, `data: {event, timestamp, collection, project, document}`; heartbeat comments; `stream.reset`, `stream.closed` and `stream.checkpoint` events',
          content: { 'text/event-stream': { schema: z.string() } },
        },
      },
      errors: [400, 403, 406, 410],
    }),
  },
};
