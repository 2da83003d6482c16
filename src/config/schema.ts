/** The shape of Folio's configuration; every value is validated at start. */
import { z } from 'zod';
import { MAX_BSON_BYTES_CEILING } from '../store/documentSize.js';

const positiveInt = z.number().int().positive();
const nonNegativeInt = z.number().int().nonnegative();

export const planLimitsSchema = z.strictObject({
  requestsPerSecond: positiveInt,
  activeKeys: positiveInt,
  maxFilters: positiveInt,
  maxPageSize: positiveInt,
  maxOffset: nonNegativeInt,
  maxBulkOperations: positiveInt,
  maxImportBytes: positiveInt,
  maxImportDocuments: positiveInt,
  maxExportDocuments: positiveInt,
  webhookRetries: nonNegativeInt,
  changeStreams: z.boolean(),
  versionDiff: z.boolean(),
  storedVersions: positiveInt,
  /** Webhooks per collection. */
  maxWebhooks: positiveInt,
  /** Declared indexes per collection. */
  maxIndexes: nonNegativeInt,
  /** Days a deleted document stays in its collection's trash (0: deletes erase at once). */
  trashRetentionDays: nonNegativeInt,
  /** Collection schemas a project may set per minute (each is compiled: docs/collections.md). */
  schemaChangesPerMinute: positiveInt,
});

export const configSchema = z.strictObject({
  port: z.number().int().min(0).max(65535),
  host: z.string().min(1),
  dataDir: z.string().min(1),
  /** The embedded store's durability (src/store/embedded/index.ts). */
  embedded: z.strictObject({
    synchronous: z.enum(['full', 'normal']),
    /** MiB of list pages and counts kept until their collection is next written; 0 turns it off. */
    queryCacheMb: nonNegativeInt,
    /** MiB of database pages SQLite keeps in memory (its `cache_size`). */
    pageCacheMb: positiveInt,
  }),
  mongodbUri: z.string(),
  /** `auto`: MongoDB when `mongodbUri` is set, else embedded. */
  store: z.enum(['auto', 'embedded', 'mongodb', 'mongodb-memory']),
  mongodb: z.strictObject({
    dbPrefix: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,19}$/),
    /** `maxTimeMS` of list queries and counts (503 `query_timeout` past it). */
    queryTimeoutMs: positiveInt,
    /** `maxCommitTimeMS`, and how long a transaction may be retried (503 `write_unconfirmed` past it). */
    commitTimeoutMs: positiveInt,
    /** `wtimeoutMS` of majority writes. */
    writeConcernTimeoutMs: positiveInt,
    /** How often a write re-checks that its collection still records pre- and post-images. */
    collectionRecheckMs: nonNegativeInt,
    /** How long an operation waits for a pooled connection (`waitQueueTimeoutMS`; 503 past it). */
    poolWaitTimeoutMs: positiveInt,
    /** Bytes of recent change events kept in memory to serve stream resumes (0: none). */
    changeRingBytes: nonNegativeInt,
    /** Catch-up change streams (resumes older than the ring) open at once per instance. */
    maxCatchUpStreams: positiveInt,
    /** How long a resume waits for a catch-up slot before it is refused. */
    catchUpWaitMs: positiveInt,
    /** How long a change subscription may take to be ready before it ends `unavailable`. */
    streamReadyTimeoutMs: positiveInt,
  }),
  bootstrap: z.boolean(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  /** `Access-Control-Allow-Origin` for browser clients: `*` or one origin. */
  cors: z.strictObject({ origin: z.string().min(1) }),
  auth: z.strictObject({
    signup: z.enum(['open', 'closed']),
    sessionTtlHours: positiveInt,
    /** How long an instance may reuse an API-key look-up (0: never); see services/keyCache.ts. */
    keyCacheMs: nonNegativeInt,
    /** Failed logins per email, and per client address, within the window before 429 (services/signInThrottle.ts). */
    loginFailuresPerAccount: positiveInt,
    loginFailuresPerAddress: positiveInt,
    /** Signup attempts per client address within the window before 429. */
    signupsPerAddress: positiveInt,
    throttleWindowMs: positiveInt,
  }),
  documents: z.strictObject({
    maxBytes: positiveInt,
    /** The stored form's BSON size (see services/documentRules.ts for why and the ceiling). */
    maxBsonBytes: positiveInt.max(MAX_BSON_BYTES_CEILING),
  }),
  events: z.strictObject({ retentionMs: positiveInt }),
  streams: z.strictObject({
    heartbeatMs: positiveInt,
    maxPerKey: positiveInt,
    /** The `retry:` hint: how long an SSE client waits before reconnecting. */
    retryMs: positiveInt,
    /** Undelivered events one stream may hold before it is closed as too slow. */
    bufferLimit: positiveInt,
    /** Bytes written to one stream and not yet read by its client before it is closed as too slow. */
    bufferBytes: positiveInt,
    /** How long a stream ticket may open its (one) stream after it is minted. */
    ticketTtlMs: positiveInt,
    /** How often open streams re-check their key (revoked, rotated) and plan. */
    keyCheckMs: positiveInt,
  }),
  webhooks: z.strictObject({
    allowPrivateTargets: z.boolean(),
    backoffBaseMs: positiveInt,
    timeoutMs: positiveInt,
    /** Seals webhook secrets at rest: 32 random bytes, base64. Empty: a key kept by the store. */
    secretKey: z
      .string()
      .refine((v) => v === '' || Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded'),
    /** How often Agenda looks for due deliveries (retries; other instances' new jobs). */
    pollMs: positiveInt,
    /** Deliveries one process runs at once. */
    concurrency: positiveInt,
    /** Deliveries kept in each webhook's history. */
    keepDeliveries: positiveInt,
    /** Failed deliveries in a row that disable a webhook. */
    disableAfterFailures: positiveInt,
    /** Bytes of a receiver's answer read (the rest is discarded). */
    maxResponseBytes: positiveInt,
    /** The dispatcher's lease: another instance takes over this long after a holder died. */
    dispatcherLeaseMs: positiveInt,
    /** First attempts the dispatcher has in flight at once (over one keep-alive client). */
    dispatchConcurrency: positiveInt,
    /** How long a collection's webhook list is reused; other instances see a change within it. */
    listCacheMs: positiveInt,
    /** Parts of the change feed dispatched separately (a lease and a position each); see docs/webhooks.md. */
    dispatchPartitions: positiveInt,
    /** Partition leases one instance takes at once before leaving the rest to others (fair share). */
    partitionsPerInstance: positiveInt,
  }),
  rateLimit: z.strictObject({ windowMs: positiveInt }),
  /** Automatic single-field indexes (services/autoIndexes.ts); `enabled` is every project's default. */
  autoIndexes: z.strictObject({
    enabled: z.boolean(),
    /** Only collections of at least this many documents get one. */
    minDocuments: positiveInt,
    /** Queries filtering or sorting on the field within `windowMs` before one is built. */
    minQueries: positiveInt,
    windowMs: positiveInt,
    /** An automatic index no query used for this long is dropped. */
    unusedAfterMs: positiveInt,
    /** Automatic indexes per collection (they also count against the plan's maxIndexes). */
    maxPerCollection: nonNegativeInt,
  }),
  /** Node HTTP server timeouts (src/http/serverTimeouts.ts). */
  http: z
    .strictObject({
      requestTimeoutMs: positiveInt,
      headersTimeoutMs: positiveInt,
      keepAliveTimeoutMs: positiveInt,
      /**
       * A reverse proxy is in front: take the client's address, host and scheme from its
       * X-Forwarded-For (last entry), X-Forwarded-Host and X-Forwarded-Proto. Off, any client
       * could set them.
       */
      trustProxy: z.boolean(),
    })
    .refine((http) => http.headersTimeoutMs <= http.requestTimeoutMs, {
      path: ['headersTimeoutMs'],
      message: 'must not exceed FOLIO_HTTP_REQUEST_TIMEOUT_MS (the whole request includes its headers)',
    }),
  /**
   * Prometheus metrics at `GET /metrics`, served only when enabled and only to
   * `Authorization: Bearer <token>` (at least 16 characters; docs/operations.md).
   */
  metrics: z
    .strictObject({ enabled: z.boolean(), token: z.string() })
    .refine((metrics) => !metrics.enabled || metrics.token.length >= 16, {
      path: ['token'],
      message:
        'must be at least 16 characters when FOLIO_METRICS_ENABLED is true (metrics are never served unprotected)',
    }),
  /**
   * Imports commit in batches of at most this many documents and bytes; one key runs at most
   * `maxConcurrentPerKey` imports at once, 429 beyond (docs/import-export.md).
   */
  imports: z.strictObject({
    batchDocuments: positiveInt,
    batchBytes: positiveInt,
    maxConcurrentPerKey: positiveInt,
    /** Checked records an import keeps in memory (their JSON bytes) before spooling to a file. */
    spoolMemoryBytes: nonNegativeInt,
  }),
  plans: z.strictObject({ free: planLimitsSchema, pro: planLimitsSchema, team: planLimitsSchema }),
});

export type Config = z.infer<typeof configSchema>;
export type PlanLimits = z.infer<typeof planLimitsSchema>;
