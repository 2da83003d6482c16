/** Recognising the few MongoDB server errors the store turns into results. */
import { MongoBulkWriteError, MongoServerError } from 'mongodb';
import { QueryRejectedError } from '../port.js';

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
