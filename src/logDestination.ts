/**
 * Where `folio serve` writes its log lines (the access log's included): standard output, in
 * batches, off the request path, and never holding more than a bound in memory.
 *
 * Each write to the file descriptor is a job on libuv's thread pool and a callback back on the
 * main thread. Written as each line came (pino's default), a GET under load paid for one of
 * those every one or two requests, about 3 µs of its 47–52 µs of server CPU here; batched, a
 * write carries a page of lines. A quiet server's lines still appear within LOG_FLUSH_MS (twice
 * that when a tick meets a write in flight), and pino writes what is left synchronously when
 * the process exits, so a stop or a crash that reaches `exit` loses nothing; a `kill -9` loses
 * at most what was waiting (as before it lost the line being written).
 */
import { type DestinationStream, pino } from 'pino';

/** A write starts once this many bytes wait: a page, about fifteen access-log lines. */
export const LOG_BATCH_BYTES = 4096;
/** Lines fewer than a batch are written at the latest on the next tick of this period. */
export const LOG_FLUSH_MS = 250;
/**
 * Past this many bytes waiting (standard output not read: a stalled pipe, a full disk), a line is
 * dropped and counted (`folio_log_dropped_bytes_total`) rather than held: the log never grows
 * the process without bound.
 */
export const LOG_MAX_WAITING_BYTES = 16 * 2 ** 20;

export interface LogDestination {
  stream: DestinationStream;
  /** Bytes of lines dropped because LOG_MAX_WAITING_BYTES were waiting. */
  droppedBytes(): number;
}

/** How a destination batches and bounds; the defaults above unless a test needs others. */
export interface LogBatching {
  batchBytes: number;
  flushMs: number;
  maxWaitingBytes: number;
}

const DEFAULT_BATCHING: LogBatching = {
  batchBytes: LOG_BATCH_BYTES,
  flushMs: LOG_FLUSH_MS,
  maxWaitingBytes: LOG_MAX_WAITING_BYTES,
};

/** `dest`: a file descriptor (standard output by default) or a file's path (tests). */
export function logDestination(
  dest: number | string = 1,
  batching: LogBatching = DEFAULT_BATCHING,
): LogDestination {
  // pino's destination (sonic-boom) does the batching: a write once `minLength` bytes wait, a
  // flush every `periodicFlush` ms, lines past `maxLength` bytes waiting dropped with a `drop`.
  const stream = pino.destination({
    dest,
    sync: false,
    minLength: batching.batchBytes,
    periodicFlush: batching.flushMs,
    maxLength: batching.maxWaitingBytes,
  });
  let dropped = 0;
  stream.on('drop', (line: string) => {
    dropped += Buffer.byteLength(line);
  });
  return { stream, droppedBytes: () => dropped };
}
