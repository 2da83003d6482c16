/**
 * Response shapes and shared parameters of the public API, as zod schemas the OpenAPI document
 * is generated from. Request schemas are not here: each lives beside the code that validates
 * requests with it (services, query/), and the operations import it from there.
 */
import { z } from 'zod';
import { keyRulesSchema } from '../../services/apiKeys.js';
import { COLLECTION_PATTERN, DOCUMENT_ID_PATTERN } from '../../services/documentRules.js';

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: 'Stable snake_case code, e.g. `invalid_query`.' }),
      message: z.string().meta({ description: 'A human sentence; may change between releases.' }),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .meta({ id: 'Error' });

const metadata = {
  _id: z.string().meta({ example: 'doc_01JD3S8W2Q6N0ZJ1T6Q4K7V8XY' }),
  $createdAt: z.string().meta({ format: 'date-time' }),
  $updatedAt: z.string().meta({ format: 'date-time' }),
  $version: z.int().min(1),
};

export const documentSchema = z
  .object(metadata)
  .catchall(z.unknown())
  .meta({ id: 'Document', description: 'User fields plus the four managed fields.' });

export const documentBodySchema = z.record(z.string(), z.unknown()).meta({
  id: 'DocumentBody',
  description:
    'A JSON object of user fields (at most 1 MiB, 64 levels). Names may not be empty, start with `$`, contain `.` or a control character, or be `__proto__`; `_folio` is reserved at the top level. `_id` is optional (must match the path on PUT); managed fields sent back are ignored.',
});

/**
 * A listed document: all four managed fields, unless `select` named the fields to return, when
 * it holds `_id` and the selected fields only (managed fields included only when selected).
 */
export const listedDocumentSchema = z
  .object({
    _id: metadata._id,
    $createdAt: metadata.$createdAt.optional(),
    $updatedAt: metadata.$updatedAt.optional(),
    $version: metadata.$version.optional(),
  })
  .catchall(z.unknown())
  .meta({
    id: 'ListedDocument',
    description:
      'A document of a list: user fields and the managed fields, except with `select`, which returns `_id` and the selected fields only (a managed field only when selected).',
  });

export const listResponseSchema = z
  .object({
    data: z.array(listedDocumentSchema),
    meta: z.object({
      total: z.int().nullable().meta({ description: 'Matching documents; null with `total=none`.' }),
      totalExact: z.boolean().optional().meta({
        description: 'With `total=estimate`: false when counting stopped early (total is a lower bound).',
      }),
      limit: z.int(),
      offset: z.int().optional().meta({ description: 'Absent on a cursor page (`after`).' }),
      hasMore: z.boolean(),
      next: z
        .string()
        .nullable()
        .meta({ description: 'Cursor for the next page (`after=`); null when there is none.' }),
    }),
  })
  .meta({ id: 'DocumentList' });

export const countResponseSchema = z.object({ count: z.int() }).meta({ id: 'Count' });

export const versionRecordSchema = z
  .object({
    version: z.int().min(1),
    operation: z.enum(['create', 'update', 'patch', 'restore']),
    timestamp: z.string().meta({ format: 'date-time' }),
    apiKeyHint: z.string().meta({ example: 'folio_sk_live_...abcd' }),
  })
  .meta({ id: 'VersionRecord' });

export const diffSchema = z
  .object({
    from: z.int(),
    to: z.int(),
    changes: z.array(
      z.object({
        path: z.string(),
        type: z.enum(['changed', 'added', 'removed']),
        from: z.unknown().optional(),
        to: z.unknown().optional(),
        value: z.unknown().optional(),
      }),
    ),
  })
  .meta({ id: 'VersionDiff' });

export const apiKeySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    project: z.string(),
    env: z.enum(['live', 'test']),
    scope: z.enum(['read-write', 'read-only']),
    config: z.record(z.string(), z.unknown()),
    status: z.enum(['active', 'revoked']),
    hint: z.string(),
    rules: keyRulesSchema.meta({
      description: 'What the key may reach; null: every collection of its project environment.',
    }),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    rotatedFrom: z.string().optional(),
  })
  .meta({ id: 'ApiKey' });

export const keyWithSecretSchema = z
  .object({ apiKey: apiKeySchema, rawKey: z.string().meta({ description: 'Shown once.' }) })
  .meta({ id: 'ApiKeyWithSecret' });

export const accountSchema = z
  .object({ id: z.string(), email: z.string(), plan: z.enum(['free', 'pro', 'team']), createdAt: z.string() })
  .meta({ id: 'Account' });

export const projectSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    createdAt: z.string(),
    allowedOrigins: z.array(z.string()).nullable(),
    autoIndexes: z.boolean().nullable(),
  })
  .meta({ id: 'Project' });

export const webhookSchema = z
  .object({
    id: z.string(),
    project: z.string(),
    env: z.enum(['live', 'test']),
    collection: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string(),
    status: z.enum(['active', 'disabled']),
    consecutiveFailures: z.int(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });

export const deliverySchema = z
  .object({
    id: z.string().meta({ description: 'Also sent as `X-Service-Delivery-Id`, the same on every retry.' }),
    webhookId: z.string(),
    event: z.string(),
    documentId: z.string().nullable(),
    eventTimestamp: z.string(),
    status: z.enum(['pending', 'succeeded', 'failed', 'cancelled']),
    attempts: z.array(
      z.object({
        number: z.int(),
        at: z.string(),
        statusCode: z.int().nullable(),
        error: z.string().nullable(),
        durationMs: z.number(),
        nextRetryAt: z.string().nullable(),
      }),
    ),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Delivery' });

export const webhookWithSecretSchema = webhookSchema
  .extend({ secret: z.string().meta({ description: '`whsec_...`; shown only here.' }) })
  .meta({ id: 'WebhookWithSecret' });

export const importResultSchema = z
  .object({
    imported: z.int(),
    skipped: z.int(),
    errors: z.array(
      z.object({
        index: z.int(),
        line: z.int().optional(),
        _id: z.string().optional(),
        code: z.string(),
        message: z.string(),
      }),
    ),
    total: z.int().meta({ description: '`imported + skipped + errors.length`' }),
  })
  .meta({ id: 'ImportResult' });

export const bulkResultSchema = z
  .object({
    results: z.array(
      z.object({
        status: z.int(),
        _id: z.string().optional(),
        ok: z.boolean(),
        error: z.object({ code: z.string(), message: z.string() }).optional(),
      }),
    ),
    summary: z.object({ total: z.int(), succeeded: z.int(), failed: z.int() }),
  })
  .meta({ id: 'BulkResult' });

/** The headers every response to a request with a valid API key carries. */
// Headers and path parameters carry ids: the document registers each once under `components`
// and refers to it, rather than repeating it under every operation.
const RATE_LIMIT_HEADERS: ReadonlyArray<readonly [name: string, id: string, description?: string]> = [
  ['X-RateLimit-Limit', 'RateLimitLimit', 'Requests per window (the plan’s per-second rate).'],
  ['X-RateLimit-Remaining', 'RateLimitRemaining'],
  ['X-RateLimit-Reset', 'RateLimitReset', 'Unix epoch seconds at which the window ends.'],
];
export const rateLimitHeaders = z.object(
  Object.fromEntries(
    RATE_LIMIT_HEADERS.map(([name, id, description]) => [
      name,
      z.int().meta({ ...(description ? { description } : {}), header: { id } }),
    ]),
  ),
);

/** Every answer carries the request's id (the client's `X-Request-Id` when it sent a valid one). */
export const requestIdHeader = z.object({
  'X-Request-Id': z.string().meta({
    description: 'The request’s id, as in the server log; echoes a valid `X-Request-Id` the client sent.',
    header: { id: 'RequestId' },
  }),
});

export const locationHeader = z.object({
  Location: z.string().meta({ description: 'The path of the resource created.', header: { id: 'Location' } }),
});

/**
 * The same headers on answers that can come before the key was checked (a 404 for a path that is
 * no project's, a 500): present whenever a valid key was.
 */
export const rateLimitHeadersIfKeyed = z.object(
  Object.fromEntries(
    RATE_LIMIT_HEADERS.map(([name, id]) => [
      name,
      z
        .int()
        .optional()
        .meta({ header: { id: `${id}IfKeyed` } }),
    ]),
  ),
);

export const etagHeader = z.object({
  ETag: z.string().meta({ description: 'The document’s `$version`, quoted: `"3"`.', header: { id: 'ETag' } }),
});

export const ns = z.string().meta({ description: 'Project name.', param: { id: 'ns' } });
export const collection = z
  .string()
  .regex(COLLECTION_PATTERN)
  .meta({ description: 'Collection name; created by its first write.', param: { id: 'collection' } });
export const documentId = z
  .string()
  .regex(DOCUMENT_ID_PATTERN)
  .meta({ description: 'Document id.', param: { id: 'documentId' } });

export const collectionPath = z.object({ ns, collection });
export const documentPath = z.object({ ns, collection, id: documentId });
export const versionNumber = z.int().min(1).meta({ description: 'A version number (`$version`).' });
export const versionPath = documentPath.extend({ version: versionNumber });
export const webhookPath = collectionPath.extend({
  id: z.string().meta({ description: 'Webhook id (`wh_...`).' }),
});
export const ifMatch = z.object({
  'If-Match': z
    .string()
    .optional()
    .meta({ description: '`"<$version>"` (or `*`): write only if it is current; 412 otherwise.' }),
});

/** Every error code Folio answers with: `[status, code, when]`. */
export const ERROR_CATALOG: ReadonlyArray<readonly [number, string, string]> = [
  [400, 'invalid_body', 'malformed JSON, a non-object body, a refused field name, nesting over 64 levels'],
  [
    400,
    'invalid_query',
    'a bad filter, operator, sort, select, limit, offset, after (cursor), total or version; `details.param` names it',
  ],
  [400, 'invalid_patch', 'a malformed JSON patch, or one that writes managed fields'],
  [400, 'invalid_header', 'a malformed `If-Match`'],
  [400, 'missing_id', 'an imported record lacks its `idField` (an entry of the import’s `errors`)'],
  [400, 'bad_request', 'not valid HTTP/1.1 (request line, header or body framing); the connection closes'],
  [401, 'unauthorized', 'a missing, unknown or revoked API key or session (`WWW-Authenticate: Bearer`)'],
  [
    403,
    'forbidden',
    'a key used on another project, another account’s resource, or `explain=true` with a read-only key',
  ],
  [403, 'read_only_key', 'a read-only key on POST, PUT, PATCH or DELETE'],
  [
    403,
    'collection_access',
    'a key whose rules show it the collection but not the access the request needs (`write`, or `every document`: no rule filter, for webhooks and query plans); `details: {collection, needed}`',
  ],
  [
    403,
    'outside_rules',
    'a write whose document would fall outside the key’s rule filter; `details: {collection}`; nothing written',
  ],
  [403, 'origin_not_allowed', 'a browser origin the project does not allow for this key'],
  [403, 'plan_limit_exceeded', 'a quantity over the plan; `details: {limit, max, plan}`'],
  [403, 'plan_feature_unavailable', 'a feature the plan lacks (version diff on Free)'],
  [403, 'signup_closed', 'signup when the server has closed it'],
  [
    403,
    'csrf_failed',
    'a state-changing request by session cookie without `X-CSRF-Token`, or from another origin',
  ],
  [
    404,
    'not_found',
    'an unknown document, version, key, project or route; a collection out of the key’s rules, or a document outside them',
  ],
  [405, 'method_not_allowed', 'a known path with a method it does not take'],
  [406, 'not_acceptable', 'an `Accept` the route cannot answer'],
  [409, 'conflict', 'an id, email or project name that is taken'],
  [409, 'patch_failed', 'a JSON patch that cannot apply (failed `test`, missing path)'],
  [
    409,
    'unique_violation',
    'a write repeating a value a declared unique index holds; `details: {index, conflictingId}`',
  ],
  [409, 'write_conflict', 'a document changing too fast to write; retry'],
  [408, 'request_timeout', 'headers or body did not arrive in time; the connection closes'],
  [
    410,
    'resync_required',
    'a `Last-Event-ID` that is unknown, malformed or older than the retained events: read the current state, then open a new stream without it',
  ],
  [412, 'version_mismatch', '`If-Match` is not the current version'],
  [
    400,
    'invalid_schema',
    'a collection schema Folio refuses (remote `$ref`, size, depth, enum, pattern, format); `details.schemaPath`',
  ],
  [
    422,
    'schema_violation',
    'a document that fails its collection’s schema; `details.errors: [{instancePath, keyword, message}]`; nothing written',
  ],
  [413, 'payload_too_large', 'a body or resulting document over the size limit'],
  [415, 'unsupported_media_type', 'a Content-Type or Content-Encoding the route does not take'],
  [429, 'rate_limited', 'over the key’s requests per second; `Retry-After` says when to retry'],
  [429, 'too_many_streams', 'the key already has its maximum of open change streams'],
  [
    429,
    'too_many_imports',
    'the key already runs its maximum of imports at once; `Retry-After` says when to retry',
  ],
  [
    429,
    'too_many_attempts',
    'too many failed logins for the account or from the address, or signups from the address; `Retry-After` says when to retry',
  ],
  [431, 'headers_too_large', 'request line and headers over 16 KiB; the connection closes'],
  [500, 'internal_error', 'a bug; the server log has the details under the request id'],
  [
    503,
    'shutting_down',
    'the server is stopping and opens no new change stream; reconnect (to another instance)',
  ],
  [503, 'import_interrupted', 'the store failed mid-import; `details.resumeAt` says where to resume'],
  [501, 'not_implemented', 'an HTTP method Folio has no route for'],
];

/** The codes of one status, for the description of an error response. */
export function errorCodesOf(status: number): string {
  const codes = ERROR_CATALOG.filter(([s]) => s === status).map(([, code]) => `\`${code}\``);
  return codes.length > 0 ? codes.join(', ') : 'Error';
}

/** The whole catalogue as a markdown table, for the document's description. */
export function errorTable(): string {
  const rows = ERROR_CATALOG.map(([status, code, when]) => `| ${status} | \`${code}\` | ${when} |`);
  return ['| status | code | when |', '| --- | --- | --- |', ...rows].join('\n');
}

export const indexSchema = z
  .object({
    name: z.string(),
    fields: z.array(z.object({ path: z.string(), order: z.union([z.literal(1), z.literal(-1)]) })),
    unique: z.boolean(),
    auto: z.boolean().meta({ description: 'Built by Folio (automatic indexes), not declared.' }),
    state: z.enum(['building', 'ready', 'failed']),
    createdAt: z
      .string()
      .meta({ description: 'ISO time; empty on MongoDB, whose catalogue does not keep it.' }),
    failure: z
      .object({ message: z.string(), ids: z.array(z.string()) })
      .optional()
      .meta({ description: 'Why a build failed; for a unique index, documents sharing a value.' }),
  })
  .meta({ id: 'Index' });

export const explainResponseSchema = z
  .object({
    plan: z.object({
      index: z.string().nullable().meta({ description: 'The declared index searched, or null.' }),
      scan: z.boolean().meta({ description: 'True when no index narrowed the documents read.' }),
      documentsExamined: z.int(),
      returned: z.int(),
      detail: z.array(z.string()).meta({ description: 'The store’s own plan lines.' }),
    }),
  })
  .meta({ id: 'QueryPlan' });
