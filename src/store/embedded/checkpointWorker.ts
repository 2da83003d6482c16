/**
 * The embedded store's checkpointer, run in a worker thread (checkpoints.ts starts it): every
 * `intervalMs` it copies the pages committed to the WAL into the database file, on a connection
 * of its own. A PASSIVE checkpoint waits for no reader or writer and none waits for it, so the
 * main thread's commits never pay for copying pages and syncing the database file.
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
  const checkpoint = db.prepare<[], CheckpointRow>('PRAGMA wal_checkpoint(PASSIVE)');
  const report = (message: CheckpointReport) => port.postMessage(message);
  let last = { log: 0, checkpointed: 0 };
  const timer = setInterval(() => {
    const started = performance.now();
    try {
      const row = checkpoint.get();
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
  }, data.intervalMs);
  port.on('message', (message: unknown) => {
    if (message !== 'stop') return;
    clearInterval(timer);
    db.close();
    port.close();
  });
}

run(workerData as CheckpointWorkerData);
