/** Multi-document transactions, retried by the driver on transient errors (write conflicts). */
import type { ClientSession, MongoClient, Timestamp, TransactionOptions } from 'mongodb';

/**
 * Snapshot reads, so a condition check and the writes after it see one consistent state;
 * majority writes, so a committed write survives a failover and change streams (which only
 * show majority-committed changes) carry it.
 */
export const TRANSACTION_OPTIONS: TransactionOptions = {
  readConcern: { level: 'snapshot' },
  writeConcern: { w: 'majority' },
  readPreference: 'primary',
};

/**
 * Run `fn` in a transaction on a fresh session. `fn` may run several times (withTransaction
 * retries on TransientTransactionError), so it must build its writes afresh each time and let
 * every driver error propagate. To give up without writing, it aborts the session itself and
 * returns its answer. Also returns the session's operation time (the commit's cluster time).
 */
export async function inTransaction<T>(
  client: MongoClient,
  fn: (session: ClientSession) => Promise<T>,
): Promise<{ result: T; operationTime: Timestamp | undefined }> {
  const session = client.startSession();
  try {
    const result = await session.withTransaction(fn, TRANSACTION_OPTIONS);
    return { result, operationTime: session.operationTime };
  } finally {
    await session.endSession();
  }
}
