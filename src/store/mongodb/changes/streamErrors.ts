/**
 * What a change-stream failure means for the store's change source, as a pure decision
 * (unit-tested with the driver's own error classes): reopen from the last position, step over
 * one event the server cannot send, end the subscriptions because their resume point is gone or
 * was refused, or stop because the stream cannot work until an operator acts.
 */
import {
  MongoError,
  MongoErrorLabel,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
} from 'mongodb';

/**
 * - `retry`: transient; reopen at the same position with backoff;
 * - `skip_event`: the next event cannot be sent (over the 16 MB BSON limit): reopening at the
 *   same position would fail again forever, so the stream steps over that one event;
 * - `history_lost`, `invalid_token`: the resume point is gone or refused;
 * - `fatal`: an error that reopening cannot clear (privileges revoked, a pipeline or option the
 *   server refuses): the subscriptions end, the instance reports not ready.
 */
export type StreamFailure = 'retry' | 'skip_event' | 'history_lost' | 'invalid_token' | 'fatal';

/** ChangeStreamHistoryLost: the resume point fell off the oplog. */
export const CHANGE_STREAM_HISTORY_LOST = 286;
/** ChangeStreamFatalError: among others, "the resume token was not found". */
export const CHANGE_STREAM_FATAL = 280;
/**
 * BSONObjectTooLarge: a change event (document, pre-image and update description together) over
 * the 16 MB BSON limit; the server fails every getMore that would carry it.
 */
export const BSON_OBJECT_TOO_LARGE = 10334;
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
  134, // ReadConcernMajorityNotAvailableYet
  150, // StaleEpoch
  189, // PrimarySteppedDown
  202, // NetworkInterfaceExceededTimeLimit
  234, // RetryChangeStream
  237, // CursorKilled (an operator's killCursors; the stream reopens)
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11601, // Interrupted (killOp)
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

/** The event at the stream's position is over the BSON size limit. */
export function isOversizedEvent(error: unknown): boolean {
  return (
    error instanceof MongoServerError &&
    (error.code === BSON_OBJECT_TOO_LARGE || error.codeName === 'BSONObjectTooLarge')
  );
}

/**
 * In order:
 * - network errors, elections, a killed cursor (transient codes or the server's
 *   ResumableChangeStreamError label): `retry`;
 * - the history is gone (code 286, or 280 saying the token was not found): `history_lost`;
 * - an event over the 16 MB limit (10334): `skip_event`;
 * - the server cannot read the token (260, 9), or refuses a client's token outright (a server
 *   error on the first batch from it): `invalid_token`;
 * - any other server error (Unauthorized 13 after a role change, a refused pipeline, 280 for
 *   another reason): `fatal`, since reopening at the same place fails the same way;
 * - an error that is not the server's (the driver's own, a bug): `retry`. An unknown error never
 *   ends subscriptions as lost history: an outage must not look like lost events.
 */
export function classifyStreamError(error: unknown, context: FailureContext): StreamFailure {
  if (isTransient(error)) return 'retry';
  if (!(error instanceof MongoServerError)) return 'retry';
  if (error.code === CHANGE_STREAM_HISTORY_LOST || error.codeName === 'ChangeStreamHistoryLost') {
    return 'history_lost';
  }
  if (error.code === CHANGE_STREAM_FATAL && TOKEN_NOT_FOUND.test(error.message)) return 'history_lost';
  if (isOversizedEvent(error)) return 'skip_event';
  if (typeof error.code === 'number' && REFUSED_TOKEN_CODES.has(error.code)) return 'invalid_token';
  if (context.clientToken && !context.established) return 'invalid_token';
  return 'fatal';
}

/** Backoff before reopening, attempt 1, 2, ...: 100 ms doubling to 30 s, with jitter in [d/2, d]. */
export function reopenDelayMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(30_000, 100 * 2 ** Math.min(Math.max(attempt, 1) - 1, 20));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}
