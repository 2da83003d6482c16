/**
 * The access log's line, formatted here rather than by pino. Every request writes one line of
 * one fixed shape, and pino's general serialiser (walk the object, escape each value, merge the
 * bindings) was the larger part of what logging cost a GET. The line is the one pino writes for
 * `logger.info({ requestId, method, path, status, ms, key }, 'request')`, field for field and
 * in pino's order, so log processors see one format for every line.
 */
import { hostname } from 'node:os';

/** pino's number for `info`. */
const INFO = 30;

export interface AccessFields {
  requestId: string;
  method: string;
  path: string;
  status: number;
  /** Milliseconds from the request's arrival at the log middleware to its answer. */
  ms: number;
  /** The API key's id, for requests that carried a valid one. */
  key: string | undefined;
}

/** pino's default bindings (`,"pid":…,"hostname":…`), written after `time` on every line. */
export function processBindings(pid = process.pid, host = hostname()): string {
  return `,"pid":${pid},"hostname":${JSON.stringify(host)}`;
}

/**
 * One newline-terminated JSON line. Every string goes through JSON.stringify: the path and the
 * request id come from the client, and a quote or newline in them must stay inside its value.
 */
export function formatAccessLine(bindings: string, time: number, fields: AccessFields): string {
  const key = fields.key === undefined ? '' : `,"key":${JSON.stringify(fields.key)}`;
  return `{"level":${INFO},"time":${time}${bindings},"requestId":${JSON.stringify(fields.requestId)},"method":${JSON.stringify(fields.method)},"path":${JSON.stringify(fields.path)},"status":${fields.status},"ms":${fields.ms}${key},"msg":"request"}\n`;
}
