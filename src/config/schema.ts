/** The shape of Folio's configuration; every value is validated at start. */
import { z } from 'zod';
import { MAX_BSON_BYTES_CEILING } from '../store/documentSize.js';

// Each key's `.describe()` text is what docs/configuration.md shows for it
// (scripts/configReference.ts renders that page from this schema).

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

export const planLimitsSchema = z.strictObject({
  requestsPerSecond: positiveInt.describe('Requests per second per API key (429 beyond).'),
  activeKeys: positiveInt.describe('Active API keys per project.'),
  maxFilters: positiveInt.describe('Filters per query.'),
  maxPageSize: positiveInt.describe('Largest page size (`limit`).'),
  maxOffset: nonNegativeInt.describe('Largest `offset` (cursor pagination has no such limit).'),
  maxBulkOperations: positiveInt.describe('Operations per bulk request.'),
  maxImportBytes: positiveInt.describe('Largest import body, in bytes.'),
  maxImportDocuments: positiveInt.describe('Documents per import.'),
  maxExportDocuments: positiveInt.describe('Documents per export.'),
  webhookRetries: nonNegativeInt.describe('Retries of a failed webhook delivery.'),
  changeStreams: z.boolean().describe('Change streams (SSE) allowed.'),
  versionDiff: z.boolean().describe('Version diffs allowed.'),
  storedVersions: positiveInt.describe('Versions kept per document.'),
  maxWebhooks: positiveInt.describe('Webhooks per collection.'),
  maxIndexes: nonNegativeInt.describe('Declared indexes per collection.'),
  trashRetentionDays: nonNegativeInt.describe(
    "Days a deleted document stays in its collection's trash (0: deletes erase at once).",
  ),
  schemaChangesPerMinute: positiveInt.describe(
    'Collection schemas a project may set per minute (each is compiled; see docs/collections.md).',
  ),
});

export const configSchema = z.strictObject({
  port: z.number().int().min(0).max(65535).describe('HTTP port (`0` picks a free one).'),
  host: z.string().min(1).describe('Listen address.'),
  dataDir: z
    .string()
    .min(1)
    .describe(
      "The embedded store's directory: `folio.db` (SQLite, WAL mode), and `folio.lock` and `folio.pid` while a server runs.",
    ),
  embedded: z
    .strictObject({
      synchronous: z
        .enum(['full', 'normal'])
        .describe(
          '`full` syncs each commit to disk before acknowledging it (commits arriving together share one sync) and survives power loss; `normal` survives a crash of Folio but may lose the last commits with the machine.',
        ),
      documentCacheMb: nonNegativeInt.describe(
        "MiB of recently read documents' JSON text kept in memory for reads by id; `0` turns the cache off.",
      ),
      queryCacheMb: nonNegativeInt.describe(
        'MiB of list pages and counts kept until their collection is next written; `0` turns the cache off.',
      ),
      pageCacheMb: positiveInt.describe('MiB of database pages SQLite keeps in memory (its `cache_size`).'),
    })
    .describe('The embedded (SQLite) store.'),
  mongodbUri: z
    .string()
    .describe('A MongoDB replica set (or sharded cluster) to run on; empty: the embedded store.'),
  store: z
    .enum(['auto', 'embedded', 'mongodb', 'mongodb-memory'])
    .describe(
      '`auto`: MongoDB when `MONGODB_URI` is set, else embedded. `mongodb-memory` starts a throw-away in-memory replica set for local trials (a dev dependency).',
    ),
  mongodb: z
    .strictObject({
      dbPrefix: z
        .string()
        .regex(/^[A-Za-z][A-Za-z0-9_]{0,19}$/)
        .describe('Prefix of the database names (`<prefix>_system`, `<prefix>_<project>_<env>`).'),
      queryTimeoutMs: positiveInt.describe(
        '`maxTimeMS` of list queries and counts (503 `query_timeout` past it).',
      ),
      commitTimeoutMs: positiveInt.describe(
        '`maxCommitTimeMS`, and how long a transaction may be retried (503 `write_unconfirmed` past it).',
      ),
      writeConcernTimeoutMs: positiveInt.describe('`wtimeoutMS` of majority writes.'),
      collectionRecheckMs: nonNegativeInt.describe(
        'How often a write re-checks that its collection still records pre- and post-images.',
      ),
      poolWaitTimeoutMs: positiveInt.describe(
        'How long an operation waits for a pooled connection (`waitQueueTimeoutMS`; 503 `store_unavailable` past it).',
      ),
      changeRingBytes: nonNegativeInt.describe(
        'Bytes of recent change events kept in memory to serve stream resumes (`0`: none).',
      ),
      maxCatchUpStreams: positiveInt.describe(
        'Catch-up change streams (resumes older than the ring) open at once per instance.',
      ),
      catchUpWaitMs: positiveInt.describe(
        'How long a resume waits for a catch-up slot before it is refused.',
      ),
      streamReadyTimeoutMs: positiveInt.describe(
        'How long a change subscription may take to be ready before it ends `unavailable`.',
      ),
    })
    .describe('The MongoDB store (docs/mongodb.md). Every wait on MongoDB is bounded by one of these.'),
  bootstrap: z
    .boolean()
    .describe('On an empty embedded store, create a dev account, project and test key at first start.'),
  logLevel: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .describe(
      'pino level. `warn` drops the line per request (for a proxy that logs them); `silent` logs nothing.',
    ),
  cors: z
    .strictObject({
      origin: z
        .string()
        .min(1)
        .describe(
          "`Access-Control-Allow-Origin` of preflights and `/api` routes: `*` or one origin. Data routes apply each project's own policy.",
        ),
    })
    .describe('Browser clients.'),
  auth: z
    .strictObject({
      signup: z.enum(['open', 'closed']).describe('`closed` refuses `POST /api/auth/signup`.'),
      sessionTtlHours: positiveInt.describe('Session lifetime.'),
      keyCacheMs: nonNegativeInt.describe(
        'How long an instance may reuse an API-key look-up (`0`: never); another instance sees a revoked key within it.',
      ),
      loginFailuresPerAccount: positiveInt.describe(
        'Failed logins per email within the window before 429 `too_many_attempts`.',
      ),
      loginFailuresPerAddress: positiveInt.describe(
        'Failed logins per client address within the window before 429.',
      ),
      signupsPerAddress: positiveInt.describe(
        'Signup attempts per client address within the window before 429.',
      ),
      throttleWindowMs: positiveInt.describe(
        'The login and signup throttle window, counted from the first attempt.',
      ),
    })
    .describe('Accounts, sessions and keys.'),
  documents: z
    .strictObject({
      maxBytes: positiveInt.describe('Largest document as JSON (413 beyond).'),
      maxBsonBytes: positiveInt
        .max(MAX_BSON_BYTES_CEILING)
        .describe('Largest document as stored (its BSON size, on both stores; 413 beyond).'),
    })
    .describe('Document size.'),
  events: z
    .strictObject({
      retentionMs: positiveInt.describe('How long change events are kept for stream resumes.'),
    })
    .describe('The change log.'),
  streams: z
    .strictObject({
      heartbeatMs: positiveInt.describe('Interval of the heartbeat comment on an idle stream.'),
      maxPerKey: positiveInt.describe('Open change streams per API key (across instances).'),
      retryMs: positiveInt.describe('The `retry:` hint: how long an SSE client waits before reconnecting.'),
      bufferLimit: positiveInt.describe(
        'Undelivered events one stream may hold before it is closed as too slow.',
      ),
      bufferBytes: positiveInt.describe(
        'Bytes written to one stream and not yet read by its client before it is closed as too slow.',
      ),
      ticketTtlMs: positiveInt.describe(
        'How long a stream ticket may open its (one) stream after it is minted.',
      ),
      keyCheckMs: positiveInt.describe(
        'How often open streams re-check their key (revoked, rotated) and plan.',
      ),
    })
    .describe('Change streams (docs/streams.md).'),
  webhooks: z
    .strictObject({
      allowPrivateTargets: z.boolean().describe('Allow webhook URLs on private and loopback addresses.'),
      backoffBaseMs: positiveInt.describe('First retry delay; it doubles per retry, with jitter.'),
      timeoutMs: positiveInt.describe('Time limit of one delivery attempt.'),
      secretKey: z
        .string()
        .refine((v) => v === '' || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded')
        .describe('Seals webhook secrets at rest: 32 random bytes, base64. Empty: a key kept by the store.'),
      pollMs: positiveInt.describe(
        "How often Agenda looks for due deliveries (retries; other instances' new jobs).",
      ),
      concurrency: positiveInt.describe('Deliveries one process runs at once.'),
      keepDeliveries: positiveInt.describe("Deliveries kept in each webhook's history."),
      disableAfterFailures: positiveInt.describe('Failed deliveries in a row that disable a webhook.'),
      maxResponseBytes: positiveInt.describe("Bytes of a receiver's answer read (the rest is discarded)."),
      dispatcherLeaseMs: positiveInt.describe(
        "The dispatcher's lease: another instance takes over this long after a holder died.",
      ),
      dispatchConcurrency: positiveInt.describe(
        'First attempts the dispatcher has in flight at once (over one keep-alive client).',
      ),
      listCacheMs: positiveInt.describe(
        "How long a collection's webhook list is reused; other instances see a change within it.",
      ),
      dispatchPartitions: positiveInt.describe(
        'Parts of the change feed dispatched separately, each with its own lease and position.',
      ),
      partitionsPerInstance: positiveInt.describe(
        'Partition leases one instance takes before leaving the rest to others (its fair share).',
      ),
    })
    .describe('Webhooks (docs/webhooks.md).'),
  rateLimit: z
    .strictObject({ windowMs: positiveInt.describe('The rate-limit window.') })
    .describe('Per-key rate limits (the rate itself is a plan limit).'),
  autoIndexes: z
    .strictObject({
      enabled: z.boolean().describe("Every project's default; a project's owner may switch it per project."),
      minDocuments: positiveInt.describe('Only collections of at least this many documents get one.'),
      minQueries: positiveInt.describe(
        'Queries filtering or sorting on the field within the window before one is built.',
      ),
      windowMs: positiveInt.describe('The window those queries are counted in.'),
      unusedAfterMs: positiveInt.describe('An automatic index no query used for this long is dropped.'),
      maxPerCollection: nonNegativeInt.describe(
        "Automatic indexes per collection (they also count against the plan's `maxIndexes`).",
      ),
    })
    .describe('Automatic single-field indexes for hot fields (docs/querying.md).'),
  http: z
    .strictObject({
      requestTimeoutMs: positiveInt.describe(
        'A request (headers and body) must arrive whole within this, else 408; raise it for large imports over slow links.',
      ),
      headersTimeoutMs: positiveInt.describe(
        "The request's headers must arrive within this (at most the request timeout).",
      ),
      keepAliveTimeoutMs: positiveInt.describe('An idle kept-alive connection is closed after this.'),
      // Off, any client could set these headers.
      trustProxy: z
        .boolean()
        .describe(
          "A reverse proxy is in front: take the client's address, host and scheme from its X-Forwarded-For (last entry), X-Forwarded-Host and X-Forwarded-Proto. Set it only behind a proxy that overwrites them.",
        ),
    })
    .refine((http) => http.headersTimeoutMs <= http.requestTimeoutMs, {
      path: ['headersTimeoutMs'],
      message: 'must not exceed FOLIO_HTTP_REQUEST_TIMEOUT_MS (the whole request includes its headers)',
    })
    .describe("Node's HTTP server."),
  metrics: z
    .strictObject({
      enabled: z.boolean().describe('Serve Prometheus metrics at `GET /metrics`.'),
      token: z
        .string()
        .describe('The bearer token `/metrics` requires: at least 16 characters when enabled.'),
    })
    // Metrics are never served unprotected.
    .refine((metrics) => !metrics.enabled || metrics.token.length >= 16, {
      path: ['token'],
      message:
        'must be at least 16 characters when FOLIO_METRICS_ENABLED is true (metrics are never served unprotected)',
    })
    .describe('Prometheus metrics (docs/operations.md).'),
  imports: z
    .strictObject({
      batchDocuments: positiveInt.describe('Documents per import commit.'),
      batchBytes: positiveInt.describe('Bytes per import commit.'),
      maxConcurrentPerKey: positiveInt.describe(
        'Imports one API key may run at once (429 `too_many_imports` beyond).',
      ),
      spoolMemoryBytes: nonNegativeInt.describe(
        'Checked records an import keeps in memory (their JSON bytes) before spooling them to a temporary file.',
      ),
    })
    .describe('Imports (docs/import-export.md).'),
  plans: z
    .strictObject({ free: planLimitsSchema, pro: planLimitsSchema, team: planLimitsSchema })
    .describe('Plan limits; the plan belongs to the account (`PATCH /api/account {"plan":"pro"}`).'),
});

export type Config = z.infer<typeof configSchema>;
export type PlanLimits = z.infer<typeof planLimitsSchema>;
