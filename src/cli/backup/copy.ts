/**
 * Writing a verified backup file into a store, and the embedded restore that makes it all or
 * nothing: the records go into a new database in a directory of their own inside the data
 * directory, which is moved into place only once complete. A restore that fails or is killed
 * leaves the data directory as it was (the next restore removes the leftover directory).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from '../../config/schema.js';
import { lockDataDir } from '../../store/embedded/database/dataDirLock.js';
import { createEmbeddedStore, DATABASE_FILE } from '../../store/embedded/index.js';
import { SEALING_KEY_FILE } from '../../store/embedded/webhooks/webhooks.js';
import type { Store } from '../../store/port.js';
import { CommandFailure } from '../transfer/options.js';
import { backupBatches } from './format.js';

/** Records written per batch (one transaction on the embedded store, a few bulk writes on MongoDB). */
export const DEFAULT_BATCH_SIZE = 500;

export interface CopyOptions {
  batchSize: number;
  /** Records already written by an earlier, interrupted run. */
  skip?: number;
  /** After each batch is written, with the number of records written in all (skipped ones included). */
  onBatch?: (written: number) => Promise<void> | void;
  /** Checked after each batch: true stops the copy there (an interrupted migrate). */
  stopRequested?: () => boolean;
}

/** Write the records of a verified file into `store`; returns how many are in (skipped ones included). */
export async function copyInto(store: Store, file: string, options: CopyOptions): Promise<number> {
  let written = options.skip ?? 0;
  for await (const batch of backupBatches(file, options.batchSize, written)) {
    await store.snapshots.write(batch);
    written += batch.length;
    await options.onBatch?.(written);
    if (options.stopRequested?.()) break;
  }
  return written;
}

/** Where a restore builds its database before moving it in. */
const STAGING_PREFIX = '.restore-';

/** The message for a store that already holds data. */
export function notEmptyMessage(where: string): string {
  return `${where} is not empty: a restore or migrate writes only into an empty store (use a new data directory or database prefix)`;
}

/**
 * Restore a verified file into the embedded store `config` names. The data directory is locked
 * for the whole restore (no server may run on it) and must hold no data.
 */
export async function restoreEmbedded(
  config: Config,
  file: string,
  options: Omit<CopyOptions, 'skip' | 'stopRequested'>,
): Promise<number> {
  const dataDir = config.dataDir;
  await mkdir(dataDir, { recursive: true });
  const lock = lockDataDir(dataDir);
  let staging: string | null = null;
  try {
    for (const entry of await readdir(dataDir)) {
      if (entry.startsWith(STAGING_PREFIX))
        await rm(path.join(dataDir, entry), { recursive: true, force: true });
    }
    if (existsSync(path.join(dataDir, DATABASE_FILE))) {
      const current = createEmbeddedStore({
        dataDir,
        eventRetentionMs: config.events.retentionMs,
        lock: false,
        backgroundCheckpoints: false,
      });
      await current.init();
      const empty = await current.snapshots.isEmpty();
      await current.close();
      if (!empty) throw new CommandFailure(notEmptyMessage(`the data directory ${path.resolve(dataDir)}`));
    }
    staging = await mkdtemp(path.join(dataDir, STAGING_PREFIX));
    const store = createEmbeddedStore({
      dataDir: staging,
      eventRetentionMs: config.events.retentionMs,
      lock: false,
      backgroundCheckpoints: false,
      synchronous: config.embedded.synchronous,
    });
    await store.init();
    let written: number;
    try {
      written = await copyInto(store, file, options);
    } finally {
      // The last connection to close checkpoints the WAL into the database file and removes it.
      await store.close();
    }
    // The sealing key first: the database is what makes the restore visible.
    if (existsSync(path.join(staging, SEALING_KEY_FILE))) {
      await rename(path.join(staging, SEALING_KEY_FILE), path.join(dataDir, SEALING_KEY_FILE));
    }
    for (const suffix of ['-wal', '-shm'])
      await rm(path.join(dataDir, DATABASE_FILE + suffix), { force: true });
    for (const suffix of ['-wal', '-shm']) {
      const left = path.join(staging, DATABASE_FILE + suffix);
      if (existsSync(left)) await rename(left, path.join(dataDir, DATABASE_FILE + suffix));
    }
    await rename(path.join(staging, DATABASE_FILE), path.join(dataDir, DATABASE_FILE));
    return written;
  } finally {
    if (staging) await rm(staging, { recursive: true, force: true });
    lock.release();
  }
}
