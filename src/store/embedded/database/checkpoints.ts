/**
 * WAL checkpoints off the event loop. SQLite's default is for the connection that commits to
 * copy the WAL into the database file whenever the WAL passes 1,000 pages, inside that commit:
 * measured here, one commit in 125 then took 8 ms and the worst over 200 ms, and every request
 * waited behind it. The server's connection now leaves that work to a worker thread
 * (checkpointWorker.ts), and checkpoints itself only as a backstop, if the worker has fallen
 * `BACKSTOP_PAGES` behind (it died, or a reader held the WAL).
 *
 * SQLite starts the WAL over only at a write that finds it wholly copied. Under light writes the
 * worker catches up between them and the WAL stays small; under sustained writes there are
 * always frames newer than its last pass, so the WAL grows to the backstop, where the commit
 * that crosses it copies what the worker has not (at most one interval's worth) and the WAL
 * starts over: one small checkpoint on the main thread per 40 MiB written instead of a full one
 * per 4 MiB.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { CheckpointReport, CheckpointWorkerData } from './checkpointWorker.js';

/** The WAL size (pages of 4 KiB: 40 MiB) at which a commit checkpoints on the main thread after all. */
export const BACKSTOP_PAGES = 10_000;
/** How often the worker looks at the WAL. */
export const CHECKPOINT_INTERVAL_MS = 200;

export interface CheckpointStats {
  /** Checkpoints that found new frames in the WAL. */
  runs: number;
  failures: number;
  /** Time the worker spent checkpointing, in milliseconds. */
  totalMs: number;
  /** Frames in the WAL at the last checkpoint. */
  walFrames: number;
}

/**
 * The page count a connection checkpoints at by itself: SQLite's own 1,000 when nothing else
 * checkpoints, else the backstop.
 */
export function autocheckpointPages(background: boolean): number {
  return background ? BACKSTOP_PAGES : 1000;
}

export class BackgroundCheckpoints {
  readonly stats: CheckpointStats = { runs: 0, failures: 0, totalMs: 0, walFrames: 0 };
  readonly #db: Database.Database;
  readonly #worker: Worker;
  readonly #exited: Promise<void>;
  #running = true;

  private constructor(db: Database.Database, worker: Worker) {
    this.#db = db;
    this.#worker = worker;
    this.#exited = new Promise((resolve) =>
      worker.once('exit', () => {
        this.#running = false;
        resolve();
      }),
    );
    worker.on('message', (report: CheckpointReport) => {
      if (report.kind === 'failed') {
        this.stats.failures += 1;
        return;
      }
      this.stats.runs += 1;
      this.stats.totalMs += report.ms;
      this.stats.walFrames = report.walFrames;
    });
    // A worker that could not start or died: the connection checkpoints as SQLite would.
    worker.on('error', () => {
      this.#running = false;
      this.stats.failures += 1;
      if (db.open) db.pragma(`wal_autocheckpoint = ${autocheckpointPages(false)}`);
    });
    // The worker's timer must not keep a process alive that has nothing else to do.
    worker.unref();
  }

  /** Hand `db`'s checkpoints (its file, already in WAL mode) to a worker thread. */
  static start(db: Database.Database, data: Omit<CheckpointWorkerData, 'intervalMs'>): BackgroundCheckpoints {
    db.pragma(`wal_autocheckpoint = ${autocheckpointPages(true)}`);
    const workerData: CheckpointWorkerData = { ...data, intervalMs: CHECKPOINT_INTERVAL_MS };
    return new BackgroundCheckpoints(
      db,
      startModuleWorker(new URL('./checkpointWorker.js', import.meta.url), workerData),
    );
  }

  /**
   * Copy the whole WAL into the database file and empty it (after an erase:
   * erasureCheckpoint.ts), on the worker; on the connection itself if the worker is gone.
   */
  truncate(): void {
    if (this.#running) this.#worker.postMessage('truncate');
    else if (this.#db.open) this.#db.pragma('wal_checkpoint(TRUNCATE)');
  }

  /** Stop the worker and wait until its connection is closed. */
  async stop(): Promise<void> {
    // Held again until it has exited: a shutdown that awaits it must not see the process end first.
    this.#worker.ref();
    this.#worker.postMessage('stop');
    await this.#exited;
  }
}

/**
 * A worker thread running `moduleUrl`. Folio runs from its TypeScript sources through tsx
 * (bin/folio.js), whose loader a worker does not inherit: the worker registers it first. The
 * `.js` URL names the compiled module; from the sources, the `.ts` beside this file.
 */
function startModuleWorker(moduleUrl: URL, workerData: unknown): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(moduleUrl, { workerData });
  const source = new URL(moduleUrl.href.replace(/\.js$/, '.ts'));
  // Both specifiers are Folio's own module URLs, never user data.
  const bootstrap =
    `import(${JSON.stringify(tsxEsmApi())})` +
    `.then((tsx) => { tsx.register(); return import(${JSON.stringify(source.href)}); });`;
  return new Worker(bootstrap, { eval: true, workerData });
}

/** The URL of tsx's ESM API module, as its package's exports map names it for `import`. */
function tsxEsmApi(): string {
  const require = createRequire(import.meta.url);
  const manifestPath = require.resolve('tsx/package.json');
  const manifest = require(manifestPath) as { exports: Record<string, { import: { default: string } }> };
  const entry = manifest.exports['./esm/api']?.import.default;
  if (!entry) throw new Error('tsx has no ./esm/api export for import');
  return pathToFileURL(join(dirname(manifestPath), entry)).href;
}
