/**
 * Timeouts of Node's HTTP server, from `http.*` configuration: a request must arrive whole
 * (headers and body) within `requestTimeoutMs` and its headers within `headersTimeoutMs`, so a
 * slow or truncated request (a `Content-Length` never delivered) cannot hold a connection
 * forever; it gets a JSON 408 (clientErrors.ts). Responses are not limited: a change stream may
 * stay open for hours once its request has arrived.
 */
import type { ServerOptions } from 'node:http';
import type { Config } from '../config/schema.js';

/** Node checks timeouts on an interval (30 s by default); check often enough to be punctual. */
const MAX_CHECK_INTERVAL_MS = 1000;
const MIN_CHECK_INTERVAL_MS = 50;

export function serverTimeouts(
  http: Pick<Config['http'], 'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs'>,
): ServerOptions {
  const shortest = Math.min(http.requestTimeoutMs, http.headersTimeoutMs);
  return {
    requestTimeout: http.requestTimeoutMs,
    headersTimeout: http.headersTimeoutMs,
    keepAliveTimeout: http.keepAliveTimeoutMs,
    // A timeout fires at most a quarter of itself late (and at most a second).
    connectionsCheckingInterval: Math.min(
      MAX_CHECK_INTERVAL_MS,
      Math.max(MIN_CHECK_INTERVAL_MS, Math.floor(shortest / 4)),
    ),
  };
}
