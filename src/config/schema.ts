/** The shape of Folio's configuration; every value is validated at start. */
import { z } from 'zod';

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
});

export const configSchema = z.strictObject({
  port: z.number().int().min(0).max(65535),
  host: z.string().min(1),
  dataDir: z.string().min(1),
  mongodbUri: z.string(),
  /** `auto`: MongoDB when `mongodbUri` is set, else embedded. */
  store: z.enum(['auto', 'embedded', 'mongodb', 'mongodb-memory']),
  mongodb: z.strictObject({ dbPrefix: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,19}$/) }),
  bootstrap: z.boolean(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  /** `Access-Control-Allow-Origin` for browser clients: `*` or one origin. */
  cors: z.strictObject({ origin: z.string().min(1) }),
  auth: z.strictObject({
    signup: z.enum(['open', 'closed']),
    sessionTtlHours: positiveInt,
    /** How long an instance may reuse an API-key look-up (0: never); see services/keyCache.ts. */
    keyCacheMs: nonNegativeInt,
  }),
  documents: z.strictObject({ maxBytes: positiveInt }),
  events: z.strictObject({ retentionMs: positiveInt }),
  streams: z.strictObject({ heartbeatMs: positiveInt, maxPerKey: positiveInt }),
  webhooks: z.strictObject({
    allowPrivateTargets: z.boolean(),
    backoffBaseMs: positiveInt,
    timeoutMs: positiveInt,
  }),
  rateLimit: z.strictObject({ windowMs: positiveInt }),
  plans: z.strictObject({ free: planLimitsSchema, pro: planLimitsSchema, team: planLimitsSchema }),
});

export type Config = z.infer<typeof configSchema>;
export type PlanLimits = z.infer<typeof planLimitsSchema>;
