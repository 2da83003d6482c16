/**
 * The trash on SQLite: `trash` holds each deleted document's last version, `trash_versions` its
 * history (the last version too, as listed), apart from `versions` because the id may be taken
 * again while it waits. Moving in and out happens inside a document commit (documents.ts calls
 * `moveIn`, `moveOut` and `erase` in its transaction); reading, purging and the expiry sweep are
 * this repository's own.
 *
 * An entry past its `expires_at` is gone to every reader at once; the sweep erases its bytes
 * later. Erasing also scrubs the change log's copies of the document (ChangeLog.scrub; the
 * outbox keeps events for `events.retentionMs`): its rows keep the id and metadata only. With
 * `secure_delete` on the connection (index.ts), freed pages are zeroed, so the bytes are not
 * left in the file.
 */
import type Database from 'better-sqlite3';
import type {
  DataScope,
  FolioDocument,
  TrashEntry,
  TrashPosition,
  TrashRepository,
  TrashStamp,
  VersionInfo,
  WriteOperation,
} from '../../port.js';
import { trashEntryOf } from '../../trashEntry.js';
import type { ChangeLog } from '../changes/changeLog.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';
import { CURRENT_VERSION_ROW, HOLDS_CURRENT_VERSION } from './currentVersion.js';

/** A `trash` row, its stamp's columns under TrashStamp's names. */
interface EntryRow extends TrashStamp {
  id: string;
  body: string;
}

type Key = [scope: string, collection: string, id: string];

export class EmbeddedTrash implements TrashRepository {
  readonly #db: Database.Database;
  readonly #insert: Database.Statement<[string, string, string, number, string, string, string, string]>;
  readonly #copyHistoryIn: Database.Statement<Key>;
  readonly #copyCurrentIn: Database.Statement<Key>;
  readonly #copyHistoryOut: Database.Statement<Key>;
  readonly #deleteEntry: Database.Statement<Key>;
  readonly #deleteHistory: Database.Statement<Key>;
  readonly #version: Database.Statement<Key, { version: number }>;
  readonly #get: Database.Statement<[...Key, string], EntryRow>;
  readonly #first: Database.Statement<[string, string, string, number], EntryRow>;
  readonly #after: Database.Statement<[string, string, string, string, string, string, number], EntryRow>;
  readonly #versions: Database.Statement<
    [...Key, string],
    { version: number; operation: WriteOperation; timestamp: string; api_key_hint: string }
  >;
  readonly #expired: Database.Statement<[string, number], { scope: string; collection: string; id: string }>;

  /**
   * `log`: the change log, whose copies of an erased document an erase scrubs. `erased`: told of
   * every erase, inside its transaction (the store then empties the WAL: erasureCheckpoint.ts).
   */
  constructor(
    db: Database.Database,
    private readonly log: ChangeLog,
    private readonly erased: () => void = () => {},
  ) {
    this.#db = db;
    const where = 'WHERE scope = ? AND collection = ? AND id = ?';
    const historyWhere = 'WHERE scope = ? AND collection = ? AND doc_id = ?';
    const columns = 'scope, collection, doc_id, version, operation, timestamp, api_key_hint, body';
    this.#insert = db.prepare(
      'INSERT INTO trash (scope, collection, id, version, deleted_at, api_key_hint, expires_at, body) ' +
        'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.#copyHistoryIn = db.prepare(
      `INSERT INTO trash_versions (${columns}) SELECT ${columns} FROM versions ${historyWhere}`,
    );
    // The document's current version is its row's; a row from before that layout has it in
    // `versions`, copied above (currentVersion.ts).
    this.#copyCurrentIn = db.prepare(
      `INSERT INTO trash_versions (${columns}) SELECT ${CURRENT_VERSION_ROW} FROM documents ${where} ` +
        `AND ${HOLDS_CURRENT_VERSION}`,
    );
    this.#copyHistoryOut = db.prepare(
      `INSERT INTO versions (${columns}) SELECT ${columns} FROM trash_versions ${historyWhere}`,
    );
    this.#deleteEntry = db.prepare(`DELETE FROM trash ${where}`);
    this.#deleteHistory = db.prepare(`DELETE FROM trash_versions ${historyWhere}`);
    this.#version = db.prepare(`SELECT version FROM trash ${where}`);
    const entry =
      'SELECT id, deleted_at AS deletedAt, api_key_hint AS apiKeyHint, expires_at AS expiresAt, body FROM trash';
    this.#get = db.prepare(`${entry} ${where} AND expires_at > ?`);
    this.#first = db.prepare(
      `${entry} WHERE scope = ? AND collection = ? AND expires_at > ? ` +
        `ORDER BY deleted_at DESC, id DESC LIMIT ${BOUND_COUNT}`,
    );
    this.#after = db.prepare(
      `${entry} WHERE scope = ? AND collection = ? AND expires_at > ? ` +
        `AND (deleted_at < ? OR (deleted_at = ? AND id < ?)) ORDER BY deleted_at DESC, id DESC LIMIT ${BOUND_COUNT}`,
    );
    this.#versions = db.prepare(
      'SELECT v.version, v.operation, v.timestamp, v.api_key_hint FROM trash_versions v ' +
        'JOIN trash t ON t.scope = v.scope AND t.collection = v.collection AND t.id = v.doc_id ' +
        'WHERE v.scope = ? AND v.collection = ? AND v.doc_id = ? AND t.expires_at > ? ORDER BY v.version DESC',
    );
    this.#expired = db.prepare(
      `SELECT scope, collection, id FROM trash WHERE expires_at <= ? LIMIT ${BOUND_COUNT}`,
    );
  }

  // -- inside a document commit ---------------------------------------------------------------

  /**
   * The document (API text `json`) and its history go to the trash, replacing an older entry.
   * Called before the document's row is deleted: its current version is copied from it.
   */
  moveIn(
    scopeKey: string,
    collection: string,
    id: string,
    json: string,
    version: number,
    stamp: TrashStamp,
  ): void {
    this.#erase(scopeKey, collection, id);
    this.#insert.run(
      scopeKey,
      collection,
      id,
      version,
      stamp.deletedAt,
      stamp.apiKeyHint,
      stamp.expiresAt,
      json,
    );
    this.#copyHistoryIn.run(scopeKey, collection, id);
    this.#copyCurrentIn.run(scopeKey, collection, id);
  }

  /** The trashed version of the id, or null (expired or not: the caller checked expiry). */
  versionOf(scopeKey: string, collection: string, id: string): number | null {
    return this.#version.get(scopeKey, collection, id)?.version ?? null;
  }

  /** The history returns to `versions` and the entry leaves the trash. */
  moveOut(scopeKey: string, collection: string, id: string): void {
    this.#copyHistoryOut.run(scopeKey, collection, id);
    this.#erase(scopeKey, collection, id);
  }

  /** Erase the id's trash entry, if any, and scrub its events from the change log. */
  eraseAll(scopeKey: string, collection: string, id: string): boolean {
    const erased = this.#erase(scopeKey, collection, id);
    this.log.scrub(scopeKey, collection, id);
    this.erased();
    return erased;
  }

  #erase(scopeKey: string, collection: string, id: string): boolean {
    this.#deleteHistory.run(scopeKey, collection, id);
    return this.#deleteEntry.run(scopeKey, collection, id).changes > 0;
  }

  // -- the repository -------------------------------------------------------------------------

  async list(
    scope: DataScope,
    collection: string,
    options: { limit: number; now: string; after?: TrashPosition | undefined },
  ): Promise<TrashEntry[]> {
    const key = scopeKeyOf(scope);
    const { after, now, limit } = options;
    const rows = after
      ? this.#after.all(key, collection, now, after.deletedAt, after.deletedAt, after.id, limit)
      : this.#first.all(key, collection, now, limit);
    return rows.map(entryOf);
  }

  async get(scope: DataScope, collection: string, id: string, now: string): Promise<TrashEntry | null> {
    const row = this.#get.get(scopeKeyOf(scope), collection, id, now);
    return row ? entryOf(row) : null;
  }

  async listVersions(scope: DataScope, collection: string, id: string, now: string): Promise<VersionInfo[]> {
    return this.#versions.all(scopeKeyOf(scope), collection, id, now).map((row) => ({
      version: row.version,
      operation: row.operation,
      timestamp: row.timestamp,
      apiKeyHint: row.api_key_hint,
    }));
  }

  async purge(scope: DataScope, collection: string, id: string): Promise<boolean> {
    const key = scopeKeyOf(scope);
    return this.#db.transaction(() => this.eraseAll(key, collection, id)).immediate();
  }

  async purgeExpired(now: string, limit: number): Promise<number> {
    return this.#db
      .transaction(() => {
        const expired = this.#expired.all(now, limit);
        for (const { scope, collection, id } of expired) this.eraseAll(scope, collection, id);
        return expired.length;
      })
      .immediate();
  }
}

function entryOf(row: EntryRow): TrashEntry {
  return trashEntryOf(row.id, row, JSON.parse(row.body) as FolioDocument);
}
