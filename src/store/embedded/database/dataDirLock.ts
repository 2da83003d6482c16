/**
 * One Folio process per data directory. The embedded store is for one process: its change feed,
 * rate-limit windows and jobs live in that process, so a second server on the same directory
 * would serve wrong answers. The running process holds an exclusive SQLite lock on
 * `<dataDir>/folio.lock`; the operating system drops that lock when the process ends in any way
 * (kill -9 included), so a crash never leaves a stale lock behind. `<dataDir>/folio.pid` only
 * tells a refused process who holds the lock.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { asDataDirError } from './dataDir.js';

export const LOCK_FILE = 'folio.lock';
export const PID_FILE = 'folio.pid';

/** Another live process holds the directory's lock. */
export class DataDirLockedError extends Error {
  readonly dir: string;
  /** The holder's process id, when its pid file could be read. */
  readonly pid: number | null;

  constructor(dir: string, pid: number | null) {
    super(
      `${path.resolve(dir)} is in use by another Folio process (${pid === null ? 'PID unknown' : `PID ${pid}`})`,
    );
    this.name = 'DataDirLockedError';
    this.dir = path.resolve(dir);
    this.pid = pid;
  }
}

export interface DataDirLock {
  /** Release the lock (idempotent); the process's exit releases it too. */
  release(): void;
}

/** The pid recorded by the lock's holder, or null when missing or unreadable. */
export function readHolderPid(dir: string): number | null {
  try {
    const text = readFileSync(path.join(dir, PID_FILE), 'utf8').trim();
    return /^[1-9]\d{0,9}$/.test(text) ? Number(text) : null;
  } catch {
    return null;
  }
}

function isBusy(error: unknown): boolean {
  const code: unknown = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/**
 * Take the directory's lock or throw: DataDirLockedError when another process holds it,
 * DataDirError when the lock file cannot be created.
 */
export function lockDataDir(dir: string): DataDirLock {
  // timeout 0: a held lock is an answer, not something to wait for.
  let db: Database.Database;
  try {
    db = new Database(path.join(dir, LOCK_FILE), { timeout: 0 });
  } catch (error) {
    throw asDataDirError(dir, error);
  }
  try {
    // In EXCLUSIVE locking mode SQLite keeps every lock it took until the connection closes;
    // BEGIN EXCLUSIVE takes the strongest one, so no other connection can even read the file.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE; COMMIT');
  } catch (error) {
    db.close();
    if (isBusy(error)) throw new DataDirLockedError(dir, readHolderPid(dir));
    throw asDataDirError(dir, error);
  }
  const pidFile = path.join(dir, PID_FILE);
  try {
    writeFileSync(pidFile, `${process.pid}\n`);
  } catch (error) {
    db.close();
    throw asDataDirError(dir, error);
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      // The pid file goes first, while the lock still keeps a next holder from writing its own.
      rmSync(pidFile, { force: true });
      db.close();
    },
  };
}
