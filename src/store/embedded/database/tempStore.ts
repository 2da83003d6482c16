/**
 * Where SQLite keeps its temporary files on the server's connection.
 *
 * Group commit runs each write of a group in its own savepoint, and SQLite journals every page a
 * savepoint changes that the group already changed, so the write can be undone alone. That
 * statement journal spills to a temporary file past 64 KiB: in a group of 20 creates it did,
 * at 27 write syscalls and 58 KiB per create (POST 2,900 req/s). Kept in memory, a create costs
 * 6 writes and 11 KiB (5,100 req/s). A group holds at most 256 writes, so the journal is bounded
 * by that many documents' pages.
 *
 * The other temporary files are sorts. A list's sort is bounded by its LIMIT and OFFSET, but an
 * index build sorts the whole collection: it gets files on disk again (`withSortsOnDisk`).
 */
import type Database from 'better-sqlite3';

export function keepTemporaryInMemory(db: Database.Database): void {
  db.pragma('temp_store = MEMORY');
}

/** Run `build` (a CREATE INDEX over a whole collection) with SQLite's temporary files on disk. */
export function withSortsOnDisk<T>(db: Database.Database, build: () => T): T {
  db.pragma('temp_store = FILE');
  try {
    return build();
  } finally {
    db.pragma('temp_store = MEMORY');
  }
}
