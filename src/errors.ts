/**
 * Client-facing errors. Services throw these; the HTTP error middleware turns them into
 * `{"error":{"code","message","details"}}` with the status. Only what is built here reaches the
 * client: any other thrown error becomes a 500 with a generic message.
 */
import type { JsonObject, StoreUnavailableError } from './store/port.js';

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: JsonObject,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const badRequest = (message: string, details?: JsonObject) =>
  new AppError(400, 'invalid_body', message, details);

/** A bad list/filter/sort/select/limit/offset parameter; `param` names the offending one. */
export const invalidQuery = (param: string, message: string) =>
  new AppError(400, 'invalid_query', `${param}: ${message}`, { param });

export const invalidPatch = (message: string, details?: JsonObject) =>
  new AppError(400, 'invalid_patch', message, details);

export const patchFailed = (message: string, details?: JsonObject) =>
  new AppError(409, 'patch_failed', message, details);

export const unauthorized = (message = 'A valid API key is required (Authorization: Bearer <key>).') =>
  new AppError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' });

export const forbidden = (message = 'This key may not access this resource.') =>
  new AppError(403, 'forbidden', message);

export const readOnlyKey = () =>
  new AppError(403, 'read_only_key', 'This API key is read-only; it may only use GET.');

/** A key's rules show it the collection but do not let it `needed` there (services/keyAccess.ts). */
export const collectionAccess = (collection: string, needed: 'read' | 'write' | 'every document') =>
  new AppError(
    403,
    'collection_access',
    needed === 'every document'
      ? `This API key's rule shows it only some documents of collection "${collection}"; this request reaches all of them (a webhook sends every change, a query plan counts every document read).`
      : `This API key needs ${needed} access to collection "${collection}" for this request.`,
    { collection, needed },
  );

/** A write would leave a document where the key's rule filter cannot see it; nothing was written. */
export const outsideRules = (collection: string) =>
  new AppError(
    403,
    'outside_rules',
    `This write would put the document outside what this API key's rules let it see in "${collection}"; nothing was written.`,
    { collection },
  );

export const notFound = (what = 'Resource') => new AppError(404, 'not_found', `${what} not found.`);

export const conflict = (message: string, details?: JsonObject) =>
  new AppError(409, 'conflict', message, details);

/** A write would repeat a value a declared unique index already holds; nothing was written. */
export const uniqueViolation = (index: string, conflictingId: string | null) =>
  new AppError(
    409,
    'unique_violation',
    `The unique index '${index}' already holds this value${conflictingId ? ` (document ${conflictingId})` : ''}; nothing was written.`,
    { index, conflictingId },
  );

export const versionMismatch = (expected: string, current: number | null) =>
  new AppError(412, 'version_mismatch', `If-Match ${expected} does not match the current version.`, {
    current,
  });

export const payloadTooLarge = (message: string, details?: JsonObject) =>
  new AppError(413, 'payload_too_large', message, details);

export const unsupportedMediaType = (accepted: readonly string[]) =>
  new AppError(415, 'unsupported_media_type', `Content-Type must be one of: ${accepted.join(', ')}.`, {
    accepted: [...accepted],
  });

export const notAcceptable = (accepted: readonly string[]) =>
  new AppError(406, 'not_acceptable', `Accept must allow one of: ${accepted.join(', ')}.`, {
    accepted: [...accepted],
  });

/**
 * What the README's plan table calls the limits whose `details.limit` is a code rather than
 * words: messages are read by people, `details` by programs.
 */
const LIMIT_NAMES: ReadonlyMap<string, string> = new Map([
  ['importDocuments', 'documents per import'],
  ['bulkOperations', 'operations per bulk request'],
  ['filters', 'filters per query'],
  ['limit', 'documents per page (limit)'],
]);

export const planLimitExceeded = (limit: string, max: number, plan: string) =>
  new AppError(
    403,
    'plan_limit_exceeded',
    `The ${plan} plan allows at most ${max} ${LIMIT_NAMES.get(limit) ?? `for ${limit}`}.`,
    { limit, max, plan },
  );

export const planFeatureUnavailable = (feature: string, plan: string) =>
  new AppError(403, 'plan_feature_unavailable', `${feature} is not available on the ${plan} plan.`, {
    feature,
    plan,
  });

export const rateLimited = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', 'Rate limit exceeded; retry after the window resets.', undefined, {
    'Retry-After': String(retryAfterSeconds),
  });

export const tooManyStreams = (max: number) =>
  new AppError(429, 'too_many_streams', `This API key already has ${max} open streams; close one first.`, {
    max,
  });

/** A stream cannot resume from the client's Last-Event-ID: it must re-read, then stream afresh. */
export const resyncRequired = (reason: 'expired' | 'unknown' | 'invalidated') =>
  new AppError(
    410,
    'resync_required',
    reason === 'expired'
      ? 'Last-Event-ID is older than the retained history; re-read the collection, then open a new stream without Last-Event-ID.'
      : reason === 'invalidated'
        ? 'The collection was dropped or renamed since Last-Event-ID; re-read it, then open a new stream without Last-Event-ID.'
        : 'Last-Event-ID is not an event id of this stream; re-read the collection, then open a new stream without Last-Event-ID.',
    { reason },
  );

/** The store cannot answer now (timeout, no primary): 503 with the store's reason and Retry-After. */
export const storeUnavailable = (error: StoreUnavailableError) =>
  new AppError(503, error.reason, error.message, undefined, {
    'Retry-After': String(error.retryAfterSeconds),
  });
