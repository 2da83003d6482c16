/**
 * The embedded store's data directory: created when missing, and every reason it cannot be used
 * (a file in its place, no permission, a read-only disk, a damaged database file) named in one
 * sentence instead of a raw file-system or SQLite error.
 */
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';

/** The data directory cannot be used; `reason` says why in words an operator can act on. */
export class DataDirError extends Error {
  readonly dir: string;
  readonly reason: string;

  constructor(dir: string, reason: string, options?: { cause?: unknown }) {
    super(`cannot use ${path.resolve(dir)} as the data directory: ${reason}`, options);
    this.name = 'DataDirError';
    this.dir = path.resolve(dir);
    this.reason = reason;
  }
}

/** File-system error codes (`errno` names) met while creating or entering the directory. */
const FILE_SYSTEM_REASONS = new Map<string, string>([
  ['EACCES', 'permission denied (the user running Folio cannot create, enter or write it)'],
  ['EPERM', 'operation not permitted (the user running Folio cannot create, enter or write it)'],
  ['EEXIST', 'it is a file, not a directory'],
  ['ENOTDIR', 'a part of the path is a file, not a directory'],
  ['EROFS', 'it is on a read-only file system'],
  ['ENOSPC', 'no space left on the device'],
  ['EDQUOT', 'the disk quota is exhausted'],
  ['ELOOP', 'too many levels of symbolic links'],
  ['ENAMETOOLONG', 'the path is too long'],
  ['EISDIR', 'a database file in it is a directory'],
]);

/** SQLite result codes (better-sqlite3's `SqliteError.code`) that are about the files. */
const SQLITE_REASONS: ReadonlyArray<[prefix: string, reason: string]> = [
  ['SQLITE_CANTOPEN', 'cannot create or open a database file in it (is it writable by this user?)'],
  ['SQLITE_READONLY', 'a database file in it is read-only (is it writable by this user?)'],
  ['SQLITE_PERM', 'permission denied on a database file in it'],
  ['SQLITE_NOTADB', 'folio.db in it is not a Folio (SQLite) database'],
  ['SQLITE_CORRUPT', 'folio.db in it is damaged; restore it from a backup'],
  ['SQLITE_FULL', 'the disk is full'],
  ['SQLITE_IOERR', 'a disk I/O error occurred while reading or writing it'],
];

/**
 * Why an error met while opening the store makes the directory unusable, or null when the error
 * is about something else (and must surface as it is).
 */
export function dataDirProblem(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const code: unknown = (error as NodeJS.ErrnoException).code;
  if (typeof code !== 'string') return null;
  const fileSystem = FILE_SYSTEM_REASONS.get(code);
  if (fileSystem) return fileSystem;
  if (error.name !== 'SqliteError') return null;
  // Extended codes (SQLITE_IOERR_SHORT_READ, SQLITE_READONLY_DBMOVED, ...) share their prefix.
  const match = SQLITE_REASONS.find(([prefix]) => code === prefix || code.startsWith(`${prefix}_`));
  return match ? match[1] : null;
}

/** A DataDirError for a problem `dataDirProblem` recognises; any other error unchanged. */
export function asDataDirError(dir: string, error: unknown): unknown {
  if (error instanceof DataDirError) return error;
  const reason = dataDirProblem(error);
  return reason === null ? error : new DataDirError(dir, reason, { cause: error });
}

/** Create the directory if missing and check that this process may use it; throws DataDirError. */
export function prepareDataDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true });
    // mkdir passes over an existing directory it cannot write; say so before SQLite fails vaguely.
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw asDataDirError(dir, error);
  }
}
