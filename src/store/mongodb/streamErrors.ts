/**
 * What a change-stream failure means for the store's change source, as a pure decision
 * (unit-tested with the driver's own error classes): reopen from the last position, or end the
 * subscriptions because their resume point is gone or was refused.
 */
import {
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
} from 'mongodb';

export type StreamFailure = 'retry' | 'history_lost' | 'invalid_token';

/** ChangeStreamHistoryLost: the resume point fell off the oplog. */
export const CHANGE_STREAM_HISTORY_LOST = 286;
/** ChangeStreamFatalError: among others, "the resume token was not found". */
export const CHANGE_STREAM_FATAL = 280;
/** InvalidResumeToken, FailedToParse: the server could not read the token. */
export const REFUSED_TOKEN_CODES: ReadonlySet<number> = new Set([260, 9]);

/**
 * Codes of transient conditions (elections, shutdowns, a cursor killed on failover, network
 * trouble reported by a server): the MongoDB drivers' resumable-error list.
 */
export const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  43, // CursorNotFound
  63, // StaleShardVersion
  89, // NetworkTimeout
  91, // ShutdownInProgress
  133, // FailedToSatisfyReadPreference
  150, // StaleEpoch
  189, // PrimarySteppedDown
  234, // RetryChangeStream
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13388, // StaleConfig
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

const TOKEN_NOT_FOUND = /resume token was not found|not found in the oplog/i;

export interface FailureContext {
  /** The stream started from a token a client gave (not one this process read itself). */
  clientToken: boolean;
  /** The stream has returned at least one batch since it was opened from that token. */
  established: boolean;
}

export function isTransient(error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (!(error instanceof MongoError)) return false;
  if (error.hasErrorLabel(MongoErrorLabel.ResumableChangeStreamError)) return true;
  return typeof error.code === 'number' && TRANSIENT_CODES.has(error.code);
}

/**
 * - the history is gone (code 286, or 280 saying the token was not found): `history_lost`;
 * - the server cannot read the token (260, 9), or refuses a client's token outright (a server
 *   error other than a transient one on the first batch from it): `invalid_token`;
 * - everything else, network errors and elections first: `retry` (reopen with backoff). An
 *   unknown error never ends subscriptions: an outage must not look like lost history.
 */
export function classifyStreamError(error: unknown, context: FailureContext): StreamFailure {
  if (error instanceof MongoServerError) {
    if (error.code === CHANGE_STREAM_HISTORY_LOST || error.codeName === 'ChangeStreamHistoryLost') {
      return 'history_lost';
    }
    if (error.code === CHANGE_STREAM_FATAL && TOKEN_NOT_FOUND.test(error.message)) return 'history_lost';
    if (typeof error.code === 'number' && REFUSED_TOKEN_CODES.has(error.code)) return 'invalid_token';
    if (context.clientToken && !context.established && !isTransient(error)) return 'invalid_token';
  }
  return 'retry';
}

/** Backoff before reopening, attempt 1, 2, ...: 100 ms doubling to 30 s, with jitter in [d/2, d]. */
export function reopenDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(30_000, 100 * 2 ** Math.min(Math.max(attempt, 1) - 1, 20));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
