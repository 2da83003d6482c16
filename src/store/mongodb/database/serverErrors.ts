/** Recognising the few MongoDB server errors the store turns into results. */
import {
  MongoBulkWriteError,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  MongoWriteConcernError,
} from 'mongodb';
import { QueryRejectedError, StoreUnavailableError } from '../../port.js';

/** E11000: a unique index (or `_id`) already holds the value. */
export const DUPLICATE_KEY = 11000;
/** The server refuses the query's shape (e.g. `cannot sort with keys that are parallel arrays`). */
export const BAD_VALUE = 2;
/** The collection to create exists already. */
export const NAMESPACE_EXISTS = 48;

function codesOf(error: unknown): number[] {
  if (!(error instanceof MongoServerError)) return [];
  const codes = typeof error.code === 'number' ? [error.code] : [];
  if (error instanceof MongoBulkWriteError) {
    const writeErrors: unknown = error.writeErrors;
    const list = Array.isArray(writeErrors) ? writeErrors : writeErrors ? Object.values(writeErrors) : [];
    for (const item of list) {
      const code: unknown = (item as { code?: unknown }).code;
      if (typeof code === 'number') codes.push(code);
    }
  }
  return codes;
}

export function isDuplicateKeyError(error: unknown): boolean {
  return codesOf(error).includes(DUPLICATE_KEY);
}

export function isNamespaceExistsError(error: unknown): boolean {
  return codesOf(error).includes(NAMESPACE_EXISTS);
}

/**
 * The fields of the unique index a duplicate-key error is about: from the server's `keyPattern`
 * when present, else from the index name in the message (`... index: emailLower_unique dup key`),
 * split on `_`. Empty when unknown.
 */
export function duplicateKeyFields(error: unknown): string[] {
  if (!(error instanceof MongoServerError)) return [];
  const pattern: unknown = error.keyPattern;
  if (typeof pattern === 'object' && pattern !== null) return Object.keys(pattern);
  const index = /index: (\S+)/.exec(error.message)?.[1];
  return index ? index.split('_') : [];
}

/**
 * A query the server refuses for the data it meets, as the port's QueryRejectedError (a 400 for
 * the client); null for any other error.
 */
export function queryRejection(error: unknown): QueryRejectedError | null {
  if (!(error instanceof MongoServerError) || error.code !== BAD_VALUE) return null;
  const param = /sort/i.test(error.message)
    ? 'sort'
    : /projection|path collision/i.test(error.message)
      ? 'select'
      : 'filter';
  return new QueryRejectedError(param, `MongoDB refused the query: ${error.message}`);
}

/** MaxTimeMSExpired: an operation ran past its `maxTimeMS` (or a commit past `maxCommitTimeMS`). */
export const MAX_TIME_MS_EXPIRED = 50;

/**
 * Server errors that mean "no primary to talk to right now" (elections, shutdowns, unreachable
 * members): the driver's retryable-read codes, which it already retried once.
 */
export const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** How long a client is told to wait after a 503 (an election usually completes within it). */
export const RETRY_AFTER_SECONDS = 5;

function hasLabel(error: unknown, label: string): boolean {
  return error instanceof MongoError && error.hasErrorLabel(label);
}

/** The driver waited `waitQueueTimeoutMS` for a pooled connection (the class is not exported). */
export function isPoolWaitTimeout(error: unknown): boolean {
  return error instanceof MongoError && error.name === 'MongoWaitQueueTimeoutError';
}

function hasWriteConcernError(error: unknown): boolean {
  if (error instanceof MongoWriteConcernError) return true;
  if (error instanceof MongoBulkWriteError) return error.result?.getWriteConcernError() !== undefined;
  return false;
}

/**
 * The port's StoreUnavailableError for a failure that is the deployment's state rather than a
 * bug (the client gets a 503 with Retry-After); null for any other error. In order:
 * - the outcome of a write is unknown: a commit the server did not confirm in time
 *   (`UnknownTransactionCommitResult`: `maxCommitTimeMS` or the write-concern timeout passed),
 *   or a write whose majority acknowledgement timed out (`wtimeoutMS`) → `write_unconfirmed`;
 * - a read ran past `maxTimeMS` → `query_timeout`;
 * - no primary could be reached, transient transaction errors outlasted the retry budget, or
 *   no pooled connection came free within `poolWaitTimeoutMs` → `store_unavailable`.
 */
export function unavailability(error: unknown, queryTimeoutMs: number): StoreUnavailableError | null {
  const fail = (reason: StoreUnavailableError['reason'], message: string) =>
    new StoreUnavailableError(reason, message, RETRY_AFTER_SECONDS, { cause: error });
  if (hasLabel(error, 'UnknownTransactionCommitResult') || hasWriteConcernError(error)) {
    return fail(
      'write_unconfirmed',
      'The database did not confirm the write in time; it may or may not have been applied. ' +
        'Read the document before retrying.',
    );
  }
  if (error instanceof MongoServerError && error.code === MAX_TIME_MS_EXPIRED) {
    return fail(
      'query_timeout',
      `The query ran longer than this server allows (${queryTimeoutMs} ms). Narrow the filter or ` +
        'the page, or retry later.',
    );
  }
  const unavailable =
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoTopologyClosedError ||
    isPoolWaitTimeout(error) ||
    hasLabel(error, 'TransientTransactionError') ||
    (error instanceof MongoServerError &&
      typeof error.code === 'number' &&
      UNAVAILABLE_CODES.has(error.code));
  if (unavailable) {
    return fail(
      'store_unavailable',
      'The database is unreachable or electing a new primary; retry shortly. A write that got ' +
        'this answer may or may not have been applied.',
    );
  }
  return null;
}
