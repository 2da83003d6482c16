/** Errors any repository may throw, which the service maps to HTTP answers. */

/** Thrown when a unique field (email, project name within an account, key hash) is taken. */
export class DuplicateError extends Error {
  constructor(readonly field: string) {
    super(`duplicate ${field}`);
    this.name = 'DuplicateError';
  }
}

/**
 * The store cannot answer a query the service considers valid (MongoDB refuses, for example, a
 * sort over two parallel arrays). The service answers 400 naming `param`.
 */
export class QueryRejectedError extends Error {
  constructor(
    readonly param: 'filter' | 'sort' | 'select',
    message: string,
  ) {
    super(message);
    this.name = 'QueryRejectedError';
  }
}

/**
 * The store cannot answer in time, or at all, right now (a query over its time limit, a write
 * whose replication was not confirmed in time, no reachable primary). Thrown by any repository
 * method; the client gets a 503 with `Retry-After`. `message` is safe to show to the client.
 */
export class StoreUnavailableError extends Error {
  constructor(
    /** `query_timeout`, `write_unconfirmed` (the write may or may not have been applied) or `store_unavailable`. */
    readonly reason: 'query_timeout' | 'write_unconfirmed' | 'store_unavailable',
    message: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * `init()` found the store unusable (unreachable, misconfigured, missing a capability). The
 * message says what is wrong and how to fix it, in one line; the CLI prints it as is.
 */
export class StoreStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreStartError';
  }
}
