/**
 * Multi-document transactions with a time bound.
 *
 * The driver's `withTransaction` retries for up to 120 s, and without `maxCommitTimeMS` or a
 * write-concern timeout a commit waits forever for a majority that is not there. Here the same
 * retry rules (the drivers' "convenient transaction API": start over on
 * `TransientTransactionError`, retry the commit on `UnknownTransactionCommitResult` unless the
 * commit ran out of time) run within `commitTimeoutMs`, each commit is bounded by
 * `maxCommitTimeMS`, and majority acknowledgement by `wtimeoutMS`. What is left when the budget
 * is spent propagates, and the store reports it as StoreUnavailableError (serverErrors.ts).
 */
import {
  type ClientSession,
  type MongoClient,
  MongoError,
  MongoServerError,
  type Timestamp,
  type TransactionOptions,
} from 'mongodb';
import { MAX_TIME_MS_EXPIRED } from './serverErrors.js';

export interface WriteLimits {
  /** `maxCommitTimeMS` of every commit, and the time within which a transaction may be retried. */
  commitTimeoutMs: number;
  /** `wtimeoutMS` of the majority write concern (transactions and single writes). */
  writeConcernTimeoutMs: number;
}

/**
 * Snapshot reads, so a condition check and the writes after it see one consistent state;
 * majority writes, so a committed write survives a failover and change streams (which only
 * show majority-committed changes) carry it; both bounded in time.
 */
export function transactionOptions(limits: WriteLimits): TransactionOptions {
  return {
    readConcern: { level: 'snapshot' },
    writeConcern: { w: 'majority', wtimeoutMS: limits.writeConcernTimeoutMs },
    readPreference: 'primary',
    maxCommitTimeMS: limits.commitTimeoutMs,
  };
}

export type RetryStep = 'retryTransaction' | 'retryCommit' | 'fail';

function ranOutOfTime(error: MongoError): boolean {
  if (!(error instanceof MongoServerError)) return false;
  const concern: unknown = (error as { writeConcernError?: { code?: unknown } }).writeConcernError;
  return (
    error.code === MAX_TIME_MS_EXPIRED ||
    (typeof concern === 'object' &&
      concern !== null &&
      (concern as { code?: unknown }).code === MAX_TIME_MS_EXPIRED)
  );
}

/**
 * What to do after a failure in the transaction's body or in its commit, `elapsedMs` after the
 * first attempt started. Nothing is retried once the budget is spent, nor a commit that hit
 * `maxCommitTimeMS` (retrying it would wait as long again).
 */
export function nextStep(
  error: unknown,
  stage: 'body' | 'commit',
  elapsedMs: number,
  budgetMs: number,
): RetryStep {
  if (!(error instanceof MongoError) || elapsedMs >= budgetMs) return 'fail';
  if (stage === 'commit' && error.hasErrorLabel('UnknownTransactionCommitResult') && !ranOutOfTime(error)) {
    return 'retryCommit';
  }
  if (error.hasErrorLabel('TransientTransactionError')) return 'retryTransaction';
  return 'fail';
}

/** Jittered backoff before attempt `attempt` (≥ 1) of a transaction: up to 5 ms × 1.5^n, at most 500 ms. */
export function retryDelayMs(attempt: number, random: number = Math.random()): number {
  return random * Math.min(5 * 1.5 ** attempt, 500);
}

/**
 * Run `fn` in a transaction on a fresh session. `fn` may run several times, so it must build its
 * writes afresh each time and let every driver error propagate. To give up without writing, it
 * aborts the session itself and returns its answer. Also returns the session's operation time
 * (the commit's cluster time).
 */
export async function inTransaction<T>(
  client: MongoClient,
  limits: WriteLimits,
  fn: (session: ClientSession) => Promise<T>,
): Promise<{ result: T; operationTime: Timestamp | undefined }> {
  const options = transactionOptions(limits);
  const session = client.startSession();
  const started = performance.now();
  const elapsed = () => performance.now() - started;
  try {
    attempts: for (let attempt = 0; ; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, retryDelayMs(attempt)));
      session.startTransaction(options);
      let result: T;
      try {
        result = await fn(session);
      } catch (error) {
        if (session.inTransaction()) await session.abortTransaction().catch(() => {});
        if (nextStep(error, 'body', elapsed(), limits.commitTimeoutMs) === 'retryTransaction') continue;
        throw error;
      }
      // `fn` aborted on purpose: its answer stands and there is nothing to commit.
      if (!session.inTransaction()) return { result, operationTime: session.operationTime };
      for (let commit = 0; ; commit++) {
        if (commit > 0) await new Promise((resolve) => setTimeout(resolve, retryDelayMs(commit)));
        try {
          await session.commitTransaction();
          return { result, operationTime: session.operationTime };
        } catch (error) {
          const step = nextStep(error, 'commit', elapsed(), limits.commitTimeoutMs);
          if (step === 'retryCommit') continue;
          if (step === 'retryTransaction') continue attempts;
          throw error;
        }
      }
    }
  } finally {
    await session.endSession();
  }
}
