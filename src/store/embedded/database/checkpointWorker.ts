/**
 * The embedded store's checkpointer, run in a worker thread (checkpoints.ts starts it): every
 * `intervalMs` it copies the pages committed to the WAL into the database file, on a connection
 * of its own. A PASSIVE checkpoint waits for no reader or writer and none waits for it, so the
 * main thread's commits never pay for copying pages and syncing the database file.
 *
 * Asked to `truncate` (after an erase: erasureCheckpoint.ts), it runs a TRUNCATE checkpoint
 * instead, which also empties the WAL, at once and then at every tick until one completes. It
 * holds off writers while it waits for readers, so it waits at most `TRUNCATE_WAIT_MS` at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

export interface CheckpointWorkerData {
  file: string;
  intervalMs: number;
  synchronous: 'FULL' | 'NORMAL';
  busyTimeoutMs: number;
}

/** What the worker reports after each checkpoint that found frames in the WAL. */
export type CheckpointReport =
  | { kind: 'checkpoint'; walFrames: number; checkpointedFrames: number; ms: number }
  | { kind: 'failed'; message: string };

/** The longest a TRUNCATE checkpoint waits for a lock or a reader (commits wait behind it). */
const TRUNCATE_WAIT_MS = 50;

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

function run(data: CheckpointWorkerData): void {
  const port = parentPort;
  if (!port) throw new Error('checkpointWorker.ts runs in a worker thread');
  const db = new Database(data.file, { fileMustExist: true, timeout: data.busyTimeoutMs });
  // The checkpoint syncs the WAL before copying and the database file after, as commits would.
  db.pragma(`synchronous = ${data.synchronous}`);
  // Only the TRUNCATE checkpoint waits on the busy handler (PASSIVE never does).
  db.pragma(`busy_timeout = ${TRUNCATE_WAIT_MS}`);
  const passive = db.prepare<[], CheckpointRow>('PRAGMA wal_checkpoint(PASSIVE)');
  const truncate = db.prepare<[], CheckpointRow>('PRAGMA wal_checkpoint(TRUNCATE)');
  const report = (message: CheckpointReport) => port.postMessage(message);
  let last = { log: 0, checkpointed: 0 };
  let truncatePending = false;
  const tick = () => {
    const started = performance.now();
    try {
      const row = (truncatePending ? truncate : passive).get();
      // Busy: a reader of an older snapshot (or a writer) kept the WAL; the next tick tries again.
      if (truncatePending && row?.busy === 0) truncatePending = false;
      // Reported when the WAL changed since the last look: an idle store says nothing.
      if (row && row.log > 0 && (row.log !== last.log || row.checkpointed !== last.checkpointed)) {
        last = row;
        report({
          kind: 'checkpoint',
          walFrames: row.log,
          checkpointedFrames: row.checkpointed,
          ms: performance.now() - started,
        });
      }
    } catch (error) {
      // SQLITE_BUSY and the like: the next tick tries again; the owner counts failures.
      report({ kind: 'failed', message: (error as Error).message });
    }
  };
  const timer = setInterval(tick, data.intervalMs);
  port.on('message', (message: unknown) => {
    if (message === 'truncate') {
      truncatePending = true;
      tick();
      return;
    }
    if (message !== 'stop') return;
    clearInterval(timer);
    db.close();
    port.close();
  });
}

run(workerData as CheckpointWorkerData);
