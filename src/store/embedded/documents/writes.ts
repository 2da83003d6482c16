/**
 * The body of one document commit on SQLite (EmbeddedDocuments runs it inside the group's
 * IMMEDIATE transaction): the write conditions, then the document rows, the version rows (with
 * pruning), the trash moves and the change-log rows.
 *
 * A write that replaces a version first copies it into `versions` (currentVersion.ts), so a
 * create writes no version row at all.
 */
import type Database from 'better-sqlite3';
import {
  type DeleteWrite,
  type DocumentWrite,
  type PutWrite,
  UniqueIndexConflictError,
  type WriteConflict,
} from '../../port.js';
import { toStored } from '../../storedForm.js';
import { assertContiguous, findConflicts } from '../../writeConditions.js';
import type { ChangeLog } from '../changes/changeLog.js';
import type { EmbeddedIndexes } from '../indexes/declaredIndexes.js';
import { uniqueKeySql } from '../indexes/indexKeys.js';
import type { SqlParam } from '../query/sqlFragments.js';
import { API_TEXT, metadataIsLast, storedBodySql } from './apiText.js';
import { CURRENT_VERSION_ROW, HOLDS_CURRENT_VERSION } from './currentVersion.js';
import type { EmbeddedTrash } from './trash.js';

export type Tx = { ok: true } | { ok: false; conflicts: WriteConflict[] };

/** A document row's key; every statement below names its parameters. */
interface Key {
  scope: string;
  collection: string;
  id: string;
}

/** A version of a document as the row statements take it. */
interface Row extends Key {
  version: number;
  createdAt: string;
  updatedAt: string;
  operation: string;
  apiKeyHint: string;
  /** The API form's text (serialised once per write, shared with the change row). */
  json: string;
  /** The version this one follows (0: none). */
  expectedVersion: number;
  /** 1 when `json` ends with the metadata in fromStored's order (apiText.ts metadataIsLast). */
  ordered: 0 | 1;
}

/**
 * A statement for each form of the text: [0] with its metadata moved last in SQL, [1] stored as
 * it is (two statements: SQLite evaluates both arms of a CASE over bound parameters up front).
 */
function bodies<S>(statement: (body: string) => S): [S, S] {
  return [
    statement(storedBodySql('@json', '@createdAt', '@updatedAt', '@version')),
    statement('jsonb(@json)'),
  ];
}

/** What the caller does around each write (the embedded store's caches). */
export interface WriteHooks {
  /** The commit's conditions hold: it is about to write. */
  checked(): void;
}

/** The statements a commit runs, prepared once per connection. */
function prepare(db: Database.Database) {
  const key = 'scope = @scope AND collection = @collection';
  return {
    versionOf: db.prepare<[Key], { version: number }>(
      `SELECT version FROM documents WHERE ${key} AND id = @id`,
    ),
    current: db.prepare<[Key], { version: number; json: string }>(
      `SELECT version, ${API_TEXT} AS json FROM documents WHERE ${key} AND id = @id`,
    ),
    // The body comes as the API form's text, stored as JSONB with its metadata last (apiText.ts):
    // [0] moves the metadata last, [1] takes a text that has it there already.
    upsert: bodies((body) =>
      db.prepare<[Row]>(
        'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, operation, ' +
          'api_key_hint, api_form, body) VALUES (@scope, @collection, @id, @version, @createdAt, @updatedAt, ' +
          `@operation, @apiKeyHint, 1, ${body}) ` +
          'ON CONFLICT (scope, collection, id) DO UPDATE SET version = excluded.version, ' +
          'created_at = excluded.created_at, updated_at = excluded.updated_at, operation = excluded.operation, ' +
          'api_key_hint = excluded.api_key_hint, api_form = 1, body = excluded.body',
      ),
    ),
    // A new version of a stored document, the row found by its key, the version it follows and
    // its birth time: no insert to try first, and `created_at`, unchanged, is not written, so its
    // index entry is left alone (the upsert rewrote it on every write).
    update: bodies((body) =>
      db.prepare<[Row]>(
        'UPDATE documents SET version = @version, updated_at = @updatedAt, operation = @operation, ' +
          `api_key_hint = @apiKeyHint, api_form = 1, body = ${body} ` +
          `WHERE ${key} AND id = @id AND version = @expectedVersion AND created_at = @createdAt`,
      ),
    ),
    deleteDocument: db.prepare<[Key]>(`DELETE FROM documents WHERE ${key} AND id = @id`),
    // The version a write replaces joins the history, copied from its row in the statement (no
    // text through JavaScript). A row from before the layout (no operation) has it there already.
    keepVersion: db.prepare<[Key & { version: number }]>(
      'INSERT INTO versions (scope, collection, doc_id, version, operation, timestamp, api_key_hint, body) ' +
        `SELECT ${CURRENT_VERSION_ROW} FROM documents ` +
        `WHERE ${key} AND id = @id AND version = @version AND ${HOLDS_CURRENT_VERSION}`,
    ),
    pruneVersions: db.prepare<[Key & { through: number }]>(
      `DELETE FROM versions WHERE ${key} AND doc_id = @id AND version <= @through`,
    ),
    deleteHistory: db.prepare<[Key]>(`DELETE FROM versions WHERE ${key} AND doc_id = @id`),
    syncMark: db.prepare<[{ at: number }]>(
      'INSERT INTO sync_marks (id, at) VALUES (1, @at) ON CONFLICT (id) DO UPDATE SET at = excluded.at',
    ),
  };
}

export class DocumentWrites {
  readonly #sql: ReturnType<typeof prepare>;
  readonly #db: Database.Database;

  constructor(
    db: Database.Database,
    private readonly log: ChangeLog,
    /** Where deletes with a trash stamp move documents; null: deletes only erase. */
    private readonly trash: EmbeddedTrash | null,
    private readonly indexes: EmbeddedIndexes,
  ) {
    this.#db = db;
    this.#sql = prepare(db);
  }

  /** One row rewritten: a sync barrier's own write (EmbeddedDocuments.sync). */
  syncMark(): void {
    this.#sql.syncMark.run({ at: Date.now() });
  }

  /** One commit: every write, or none and its conflicts. */
  apply(scope: string, collection: string, writes: DocumentWrite[], hooks: WriteHooks): Tx {
    // A commit of one new version of a stored document (a PATCH, a PUT of an existing id) is
    // checked by its own UPDATE, conditioned on the version read: no separate read of the
    // version first. Should that UPDATE change nothing, the write is checked as any other, before
    // anything is written.
    const single = writes.length === 1 ? writes[0]! : null;
    const checkedByUpdate =
      single !== null && single.kind === 'put' && !single.fromTrash && single.expectedVersion > 0;
    if (checkedByUpdate) assertContiguous(writes);
    else {
      const conflicts = this.#conflicts(scope, collection, writes);
      if (conflicts.length > 0) return { ok: false, conflicts };
    }
    hooks.checked();
    const timestamp = new Date().toISOString();
    for (const write of writes) {
      const key = { scope, collection, id: write.kind === 'put' ? write.document._id : write.id };
      if (write.kind === 'delete') {
        this.#delete(key, write, timestamp);
        continue;
      }
      const json = write.json ?? JSON.stringify(write.document);
      // #conflicts proved the trash holds the version this one follows.
      if (write.fromTrash) this.trash?.moveOut(scope, collection, key.id);
      const row = rowOf(key, write, json);
      if (!this.#replace(row)) {
        if (checkedByUpdate) {
          // Nothing written yet in this commit (one write, not from the trash).
          const conflicts = this.#conflicts(scope, collection, writes);
          if (conflicts.length > 0) return { ok: false, conflicts };
        }
        this.#sql.upsert[row.ordered].run(row);
      }
      this.#versioned(row, write, timestamp);
    }
    return { ok: true };
  }

  /**
   * The new version written over the one it follows, that one joining the history first; false
   * when there is none to follow or no row is at that version (then nothing was written).
   */
  #replace(row: Row): boolean {
    const { scope, collection, id, expectedVersion } = row;
    if (expectedVersion === 0) return false;
    // Conditioned on that version alone: when it is stored, either the UPDATE or the upsert
    // replaces it (a conflict needs another version), and when it is not, nothing is copied.
    this.#sql.keepVersion.run({ scope, collection, id, version: expectedVersion });
    return this.#sql.update[row.ordered].run(row).changes === 1;
  }

  /** After a put: the versions it no longer keeps pruned, and its change row. */
  #versioned(row: Row, write: PutWrite, timestamp: string): void {
    const { scope, collection, id } = row;
    // Versions are contiguous, so "all but the newest keepVersions" (the current one among
    // them, in its row) is a version bound; none to prune while the document has no more
    // versions than it keeps (every create).
    const through = row.version - write.keepVersions;
    if (through > 0) this.#sql.pruneVersions.run({ scope, collection, id, through });
    const type = write.expectedVersion === 0 ? 'created' : 'updated';
    this.log.append(scope, collection, type, id, row.json, timestamp);
  }

  #delete(key: Key, write: DeleteWrite, timestamp: string): void {
    const { scope, collection, id } = key;
    // #conflicts proved the document exists at the expected version.
    const before = this.#sql.current.get(key)!;
    if (write.trash) this.trash?.moveIn(scope, collection, id, before.json, before.version, write.trash);
    this.#sql.deleteDocument.run(key);
    this.#sql.deleteHistory.run(key);
    this.log.append(scope, collection, 'deleted', id, before.json, timestamp);
    // Erased for good: no trash entry, and the change log keeps only ids and metadata.
    if (write.erase) this.trash?.eraseAll(scope, collection, id);
  }

  /**
   * A write refused by a declared unique index (the transaction rolled back): which index, and
   * which stored document already holds the value.
   */
  uniqueConflict(
    error: unknown,
    scopeKey: string,
    collection: string,
    writes: DocumentWrite[],
  ): UniqueIndexConflictError | null {
    if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') return null;
    const sqlName = /index '([^']+)'/.exec(String((error as Error).message))?.[1];
    const declared = sqlName === undefined ? undefined : this.indexes.uniqueIndexNamed(sqlName);
    if (!declared) return null;
    const paths = declared.index.fields.map((f) => f.path);
    // The unique index's own keys (a null equals a null), read from the written body.
    const sameValues = paths
      .map((p) => `${uniqueKeySql(p, 'body')} = ${uniqueKeySql(p, 'jsonb(?)')}`)
      .join(' AND ');
    const findOther = this.#db.prepare<SqlParam[], { id: string }>(
      `SELECT id FROM documents WHERE scope = ? AND collection = ? AND id != ? AND ${sameValues} LIMIT 1`,
    );
    for (const write of writes) {
      if (write.kind !== 'put') continue;
      const body = JSON.stringify(toStored(write.document));
      const params = paths.flatMap(() => [body, body]);
      const other = findOther.get(scopeKey, collection, write.document._id, ...params);
      if (other) return new UniqueIndexConflictError(declared.index.name, other.id);
    }
    return new UniqueIndexConflictError(declared.index.name, null);
  }

  /** Every failing write condition (shared rules: ../../writeConditions.ts). */
  #conflicts(scope: string, collection: string, writes: DocumentWrite[]): WriteConflict[] {
    assertContiguous(writes);
    const conflicts = findConflicts(
      writes,
      (id) => this.#sql.versionOf.get({ scope, collection, id })?.version ?? null,
    );
    for (const write of writes) {
      if (write.kind !== 'put' || !write.fromTrash) continue;
      const id = write.document._id;
      const trashed = this.trash?.versionOf(scope, collection, id) ?? null;
      if (trashed !== write.document.$version - 1 && !conflicts.some((c) => c.id === id))
        conflicts.push({ id, currentVersion: null });
    }
    return conflicts;
  }
}

/**
 * Written out, not `{ ...key, … }`: on Node 20 an object spread followed by more properties cost
 * 5–8 µs a row (each added property a new hidden class), and better-sqlite3 then read the
 * row's parameters off a slow object; rowOf was 7 % of an import's server CPU.
 */
function rowOf(key: Key, write: PutWrite, json: string): Row {
  const { $version, $createdAt, $updatedAt } = write.document;
  return {
    scope: key.scope,
    collection: key.collection,
    id: key.id,
    version: $version,
    createdAt: $createdAt,
    updatedAt: $updatedAt,
    operation: write.operation,
    apiKeyHint: write.apiKeyHint,
    json,
    expectedVersion: write.expectedVersion,
    ordered: metadataIsLast(write.document) ? 1 : 0,
  };
}
