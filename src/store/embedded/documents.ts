/**
 * Documents and their version history on SQLite. A commit is one IMMEDIATE transaction holding
 * the document rows, version rows (with pruning) and change-log rows; the change feed hears of
 * it only after it committed.
 *
 * A document's current version is its `documents` row, with the operation and key hint that made
 * it; `versions` holds the versions before it (currentVersion.ts, which also covers rows from
 * before this layout). A write that replaces a version first copies it into `versions`, so a
 * create writes no version row at all: every version was once stored twice, and creating a
 * document (an import, a bulk request) paid for the second copy.
 */

import type Database from 'better-sqlite3';
import {
  type CollectionInfo,
  type CommitOptions,
  type CommitResult,
  type DataScope,
  type DocumentRepository,
  type DocumentWrite,
  type FindQuery,
  type FolioDocument,
  type QueryPlan,
  type StoredFilter,
  UniqueIndexConflictError,
  type VersionInfo,
  type WriteConflict,
  type WriteOperation,
} from '../port.js';
import { toStored } from '../storedForm.js';
import { assertContiguous, findConflicts } from '../writeConditions.js';
import { API_TEXT, storedBodySql } from './apiText.js';
import type { ChangeLog } from './changeLog.js';
import type { EmbeddedChangeFeed } from './changes.js';
import { CURRENT_VERSION_ROW, HOLDS_CURRENT_VERSION } from './currentVersion.js';
import {
  collectionMatch,
  compoundPaths,
  type EmbeddedIndexes,
  sqlIndexNames,
  uniqueKeySql,
} from './declaredIndexes.js';
import { GroupCommit } from './groupCommit.js';
import { AnswerCache, DEFAULT_QUERY_CACHE_BYTES, questionText } from './query/answerCache.js';
import { compileFilter } from './query/compileFilter.js';
import { indexedPathsOf } from './query/indexedPaths.js';
import { openReader, readRow, selectSql } from './query/selectSql.js';
import type { SqlParam } from './query/sqlFragments.js';
import { scopeKeyOf } from './scopeKey.js';
import { BOUND_COUNT } from './sqlLimit.js';
import { StatementCache } from './statementCache.js';
import type { EmbeddedTrash } from './trash.js';

/** Rows a scan hands out between two turns of the event loop. */
const SCAN_YIELD_EVERY = 256;

type Tx = { ok: true } | { ok: false; conflicts: WriteConflict[] };

/** The barrier `sync()` commits: one row rewritten, so the group has something to sync. */
const SYNC = Symbol('sync');

interface CommitArgs {
  scopeKey: string;
  collection: string;
  writes: DocumentWrite[];
}

export class EmbeddedDocuments implements DocumentRepository {
  readonly #log: ChangeLog;
  readonly #feed: EmbeddedChangeFeed;
  /** The database file, for the scans' own read connections. */
  readonly #file: string;
  /** Compiled queries differ by filter shape, so their statements are cached by SQL text. */
  readonly #queries: StatementCache;

  readonly #getCurrent: Database.Statement<[string, string, string], { json: string; version: number }>;
  readonly #getMany: Database.Statement<[string, string, string], { id: string; json: string }>;
  readonly #getVersionNumber: Database.Statement<[string, string, string], { version: number }>;
  readonly #upsert: Database.Statement<
    [string, string, string, number, string, string, WriteOperation, string, string, string, string, number]
  >;
  readonly #update: Database.Statement<
    [
      number,
      string,
      WriteOperation,
      string,
      string,
      string,
      string,
      number,
      string,
      string,
      string,
      number,
      string,
    ]
  >;
  readonly #deleteDoc: Database.Statement<[string, string, string]>;
  readonly #keepVersion: Database.Statement<[string, string, string, number]>;
  readonly #pruneVersions: Database.Statement<[string, string, string, number]>;
  readonly #deleteHistory: Database.Statement<[string, string, string]>;
  readonly #listVersions: Database.Statement<
    [{ scope: string; collection: string; id: string }],
    { version: number; operation: WriteOperation; timestamp: string; api_key_hint: string }
  >;
  readonly #getVersionBody: Database.Statement<
    [{ scope: string; collection: string; id: string; version: number }],
    { body: string }
  >;
  readonly #listCollections: Database.Statement<[string], { name: string; documents: number }>;
  readonly #commits: GroupCommit<CommitArgs | typeof SYNC, Tx>;
  #documentsWritten = 0;
  readonly #syncMark: Database.Statement<[number]>;

  readonly #indexes: EmbeddedIndexes;
  /** Where deletes with a trash stamp move documents (trash.ts); null: deletes only erase. */
  readonly #trash: EmbeddedTrash | null;
  readonly #db: Database.Database;
  #examined = 0;
  /** Answers to list pages and counts (answerCache.ts); #apply makes a collection's stale. */
  readonly answers: AnswerCache;

  constructor(
    db: Database.Database,
    log: ChangeLog,
    feed: EmbeddedChangeFeed,
    indexes: EmbeddedIndexes,
    trash?: EmbeddedTrash,
    answerBytes: number = DEFAULT_QUERY_CACHE_BYTES,
  ) {
    this.#trash = trash ?? null;
    this.answers = new AnswerCache(answerBytes);
    this.#indexes = indexes;
    this.#db = db;
    // Counts the rows a query visits after its index constraints (explain only: see selectSql).
    db.function('folio_examined', { deterministic: false }, () => {
      this.#examined++;
      return 1;
    });
    this.#log = log;
    this.#feed = feed;
    this.#file = db.name;
    this.#queries = new StatementCache(db, 256);
    // The API form's text, built by SQLite (API_TEXT).
    this.#getCurrent = db.prepare(
      `SELECT version, ${API_TEXT} AS json FROM documents WHERE scope = ? AND collection = ? AND id = ?`,
    );
    // The ids as one JSON array, each looked up by the primary key: one statement (and one WAL
    // read lock) for them all, where a read per id pays both per id.
    this.#getMany = db.prepare(
      `SELECT id, ${API_TEXT} AS json FROM documents WHERE scope = ? AND collection = ? ` +
        'AND id IN (SELECT value FROM json_each(?))',
    );
    this.#getVersionNumber = db.prepare(
      'SELECT version FROM documents WHERE scope = ? AND collection = ? AND id = ?',
    );
    this.#upsert = db.prepare(
      // The body comes as the API form's text (serialised once per write, shared with the change
      // row), stored as JSONB with its metadata last (apiText.ts).
      'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, operation, api_key_hint, ' +
        `api_form, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ${storedBodySql('?', '?', '?', '?')}) ` +
        'ON CONFLICT (scope, collection, id) DO UPDATE SET ' +
        'version = excluded.version, created_at = excluded.created_at, updated_at = excluded.updated_at, ' +
        'operation = excluded.operation, api_key_hint = excluded.api_key_hint, api_form = 1, body = excluded.body',
    );
    // A new version of a stored document, the row found by its key, the version it follows and
    // its birth time: no insert to try first, and `created_at`, unchanged, is not written, so its
    // index entry is left alone (the upsert rewrote it on every write). No row changed: the
    // upsert does the write (once the write's conditions are checked).
    this.#update = db.prepare(
      'UPDATE documents SET version = ?, updated_at = ?, operation = ?, api_key_hint = ?, api_form = 1, ' +
        `body = ${storedBodySql('?', '?', '?', '?')} ` +
        'WHERE scope = ? AND collection = ? AND id = ? AND version = ? AND created_at = ?',
    );
    this.#deleteDoc = db.prepare('DELETE FROM documents WHERE scope = ? AND collection = ? AND id = ?');
    // The version a write replaces joins the history, copied from its row in the statement (no
    // text through JavaScript). A row from before the layout (no operation) has it there already.
    this.#keepVersion = db.prepare(
      'INSERT INTO versions (scope, collection, doc_id, version, operation, timestamp, api_key_hint, body) ' +
        `SELECT ${CURRENT_VERSION_ROW} FROM documents ` +
        `WHERE scope = ? AND collection = ? AND id = ? AND version = ? AND ${HOLDS_CURRENT_VERSION}`,
    );
    this.#pruneVersions = db.prepare(
      'DELETE FROM versions WHERE scope = ? AND collection = ? AND doc_id = ? AND version <= ?',
    );
    this.#deleteHistory = db.prepare(
      'DELETE FROM versions WHERE scope = ? AND collection = ? AND doc_id = ?',
    );
    // The current version (its row, where it has an operation), then the ones before it.
    this.#listVersions = db.prepare(
      'SELECT version, operation, updated_at AS timestamp, api_key_hint FROM documents ' +
        `WHERE scope = @scope AND collection = @collection AND id = @id AND ${HOLDS_CURRENT_VERSION} ` +
        'UNION ALL SELECT version, operation, timestamp, api_key_hint FROM versions ' +
        'WHERE scope = @scope AND collection = @collection AND doc_id = @id ORDER BY version DESC',
    );
    this.#getVersionBody = db.prepare(
      'SELECT body FROM versions ' +
        'WHERE scope = @scope AND collection = @collection AND doc_id = @id AND version = @version ' +
        `UNION ALL SELECT ${API_TEXT} FROM documents WHERE scope = @scope AND collection = @collection ` +
        `AND id = @id AND version = @version AND ${HOLDS_CURRENT_VERSION} LIMIT 1`,
    );
    // The primary key (scope, collection, id) serves the grouping; BINARY collation orders names
    // by code unit, as the port promises.
    this.#listCollections = db.prepare(
      'SELECT collection AS name, count(*) AS documents FROM documents WHERE scope = ? ' +
        'GROUP BY collection ORDER BY collection COLLATE BINARY',
    );
    this.#syncMark = db.prepare(
      'INSERT INTO sync_marks (id, at) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET at = excluded.at',
    );
    // Commits arriving together share one transaction and one sync (groupCommit.ts); after it,
    // the feed's tail reads the new change-log rows (after a deferred group, it holds them back).
    this.#commits = new GroupCommit(
      db,
      (args: CommitArgs | typeof SYNC) =>
        args === SYNC ? this.#mark() : this.#apply(args.scopeKey, args.collection, args.writes),
      {
        beforeGroup: () => this.#log.groupStarted(),
        beforeDeferred: () => this.#feed.held(),
        afterCommit: (durable) => {
          this.#log.groupCommitted();
          this.#feed.committed(durable);
        },
      },
      // Each commit keeps its own outcome; savepoints only once one fails (#apply runs again
      // after a rollback, and does nothing outside the transaction).
      { optimistic: true },
    );
  }

  async get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null> {
    // The API text is the document in the API form, keys in the order fromStored gives them.
    const row = this.#getCurrent.get(scopeKeyOf(scope), collection, id);
    return row ? (JSON.parse(row.json) as FolioDocument) : null;
  }

  async getMany(
    scope: DataScope,
    collection: string,
    ids: readonly string[],
  ): Promise<Map<string, FolioDocument>> {
    // No ids: `json_each('[]')` is no rows, one cheap statement.
    const rows = this.#getMany.all(scopeKeyOf(scope), collection, JSON.stringify(ids));
    return new Map(rows.map((row) => [row.id, JSON.parse(row.json) as FolioDocument]));
  }

  async commit(
    scope: DataScope,
    collection: string,
    writes: DocumentWrite[],
    options?: CommitOptions,
  ): Promise<CommitResult> {
    const scopeKey = scopeKeyOf(scope);
    try {
      const committed = this.#commits.commit({ scopeKey, collection, writes }, options?.durable ?? true);
      // In the group's queue now: commits made from here on are applied after it.
      options?.queued?.();
      return await committed;
    } catch (error) {
      throw this.#uniqueConflict(error, scopeKey, collection, writes) ?? error;
    }
  }

  /** Write transactions committed, and those of them that synced (metrics, tests). */
  get commitGroups(): { groups: number; durable: number } {
    return { groups: this.#commits.groups, durable: this.#commits.durableGroups };
  }

  /**
   * Documents written (each write of each commit applied), for the webhook retries' write gate
   * (src/jobs/writeGate.ts). A group run again after a failure counts its writes again: a rate
   * signal, not an account.
   */
  get documentsWritten(): number {
    return this.#documentsWritten;
  }

  async sync(): Promise<void> {
    // The log holds rows back from the first deferred group until a durable one lands; none
    // held: every commit so far is on disk already.
    if (!this.#log.holding) return;
    await this.#commits.commit(SYNC, true);
  }

  /** The barrier's own write: a commit with nothing in it would not sync anything. */
  #mark(): Tx {
    this.#syncMark.run(Date.now());
    return { ok: true };
  }

  async find(scope: DataScope, collection: string, query: FindQuery): Promise<FolioDocument[]> {
    // A page without a projection is kept as its texts (answerCache.ts); the answer and its
    // caching are one synchronous step, as are the array probe and the query.
    const { filter, sort, skip, limit, after, projection } = query;
    const key =
      projection === undefined
        ? this.answers.key(
            scopeKeyOf(scope),
            collection,
            `p${questionText({ filter, sort, skip, limit, after })}`,
          )
        : null;
    let texts = key === null ? undefined : (this.answers.get(key) as readonly string[] | undefined);
    if (texts === undefined) {
      const usable = this.#usable(scope, collection);
      const arrayFree = this.#arrayFree(scope, collection, query, usable);
      const { sql, params } = selectSql(scope, collection, query, usable, false, arrayFree);
      texts = this.#queries
        .get<string>(sql)
        .pluck()
        .all(...params);
      if (key !== null) this.answers.set(key, texts);
    }
    return texts.map((text) => readRow(text, projection));
  }

  async *scan(scope: DataScope, collection: string, query: FindQuery): AsyncGenerator<FolioDocument> {
    for await (const page of this.scanJson(scope, collection, query))
      for (const text of page) yield readRow(text, query.projection);
  }

  async *scanJson(scope: DataScope, collection: string, query: FindQuery): AsyncGenerator<string[]> {
    // The rows' API text, which `scan` parses; a projection has no text here.
    const { projection: _none, ...whole } = query;
    const { sql, params } = selectSql(scope, collection, whole, this.#usable(scope, collection));
    // An open iterator makes better-sqlite3 refuse every write on its connection, so a scan
    // reads on a read-only connection of its own: one WAL snapshot, writers never wait.
    const reader = openReader(this.#file);
    try {
      const rows = reader
        .prepare<SqlParam[], string>(sql)
        .pluck()
        .iterate(...params);
      let page: string[] = [];
      for (const text of rows) {
        page.push(text);
        // One turn of the event loop per page: a consumer that never awaits I/O would otherwise
        // hold the event loop for the whole scan.
        if (page.length >= SCAN_YIELD_EVERY) {
          yield page;
          page = [];
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      if (page.length > 0) yield page;
    } finally {
      reader.close();
    }
  }

  async count(scope: DataScope, collection: string, filter: StoredFilter, upTo?: number): Promise<number> {
    const scopeKey = scopeKeyOf(scope);
    // `upTo` bounds the answer (`total=estimate`), so it is part of the question.
    const key = this.answers.key(scopeKey, collection, `c${questionText({ filter, upTo })}`);
    const known = this.answers.get(key);
    if (known !== undefined) return known as number;
    const usable = this.#usable(scope, collection);
    const arrayFree = this.#arrayFree(scope, collection, { filter, sort: [] }, usable);
    const target = collectionMatch(scopeKey, collection, usable);
    const where = compileFilter(filter, usable, arrayFree, target.literal);
    const matches = `FROM documents d WHERE ${target.sql} AND (${where.sql})`;
    const sql =
      upTo === undefined
        ? `SELECT count(*) AS n ${matches}`
        : `SELECT count(*) AS n FROM (SELECT 1 ${matches} LIMIT ${BOUND_COUNT})`;
    const params = [...target.params, ...where.params];
    if (upTo !== undefined) params.push(upTo);
    const n = this.#queries.get<{ n: number }>(sql).get(...params)?.n ?? 0;
    this.answers.set(key, n);
    return n;
  }

  async listCollections(scope: DataScope): Promise<CollectionInfo[]> {
    return this.#listCollections.all(scopeKeyOf(scope));
  }

  async explain(scope: DataScope, collection: string, query: FindQuery): Promise<QueryPlan> {
    const usable = this.#usable(scope, collection);
    const arrayFree = this.#arrayFree(scope, collection, query, usable);
    const { sql, params } = selectSql(scope, collection, query, usable, true, arrayFree);
    const detail = this.#queries
      .get<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((r) => r.detail);
    this.#examined = 0;
    const returned = this.#queries.get<{ body: string }>(sql).all(...params).length;
    const scopeKey = scopeKeyOf(scope);
    const declared = this.#indexes.declared(scopeKey, collection);
    const index =
      declared.find((i) => {
        const paths = compoundPaths(i);
        const names = [
          ...i.fields.flatMap(({ path }) =>
            (['high', 'low', 'sort'] as const).map((side) => sqlIndexNames[side](scopeKey, collection, path)),
          ),
          ...(paths ? [sqlIndexNames.compound(scopeKey, collection, paths)] : []),
        ];
        return detail.some((line) => names.some((n) => line.includes(`INDEX ${n} `)));
      })?.name ?? null;
    // A search constrained past (scope, collection) narrowed the rows; anything else walked them.
    const narrowed = detail.some((line) => /\(scope=\? AND collection=\? AND /.test(line));
    return { index, scan: !narrowed, documentsExamined: this.#examined, returned, detail };
  }

  async listVersions(scope: DataScope, collection: string, id: string): Promise<VersionInfo[]> {
    return this.#listVersions.all({ scope: scopeKeyOf(scope), collection, id }).map((row) => ({
      version: row.version,
      operation: row.operation,
      timestamp: row.timestamp,
      apiKeyHint: row.api_key_hint,
    }));
  }

  async getVersion(
    scope: DataScope,
    collection: string,
    id: string,
    version: number,
  ): Promise<FolioDocument | null> {
    const row = this.#getVersionBody.get({ scope: scopeKeyOf(scope), collection, id, version });
    return row ? (JSON.parse(row.body) as FolioDocument) : null;
  }

  #usable(scope: DataScope, collection: string): ReadonlySet<string> {
    return this.#indexes.usablePaths(scopeKeyOf(scope), collection);
  }

  /** The indexed paths the query names that hold no array now (see compileFilter). */
  #arrayFree(
    scope: DataScope,
    collection: string,
    query: Pick<FindQuery, 'filter' | 'sort'>,
    usable: ReadonlySet<string>,
  ): ReadonlySet<string> {
    const paths = indexedPathsOf(query.filter, query.sort, usable);
    return paths.size === 0 ? paths : this.#indexes.arrayFree(scopeKeyOf(scope), collection, paths);
  }

  /**
   * A write refused by a declared unique index (the transaction rolled back): which index, and
   * which stored document already holds the value.
   */
  #uniqueConflict(
    error: unknown,
    scopeKey: string,
    collection: string,
    writes: DocumentWrite[],
  ): UniqueIndexConflictError | null {
    if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') return null;
    const sqlName = /index '([^']+)'/.exec(String((error as Error).message))?.[1];
    const declared = sqlName === undefined ? undefined : this.#indexes.uniqueIndexNamed(sqlName);
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

  /** The body of one commit; runs inside the IMMEDIATE transaction. */
  #apply(scopeKey: string, collection: string, writes: DocumentWrite[]): Tx {
    this.#documentsWritten += writes.length;
    // A commit of one new version of a stored document (a PATCH, a PUT of an existing id) is
    // checked by its own UPDATE, conditioned on the version read: no separate read of the
    // version first. Should that UPDATE change nothing, the write is checked as any other, before
    // anything is written.
    const single = writes.length === 1 ? writes[0]! : null;
    const checkedByUpdate =
      single !== null && single.kind === 'put' && !single.fromTrash && single.expectedVersion > 0;
    if (checkedByUpdate) assertContiguous(writes);
    else {
      const conflicts = this.#check(scopeKey, collection, writes);
      if (conflicts.length > 0) return { ok: false, conflicts };
    }
    const timestamp = new Date().toISOString();
    this.#indexes.documentsWritten(scopeKey, collection);
    this.answers.written(scopeKey, collection);
    for (const write of writes) {
      if (write.kind === 'put') {
        const doc = write.document;
        // #check proved the trash holds the version this one follows.
        if (write.fromTrash) this.#trash?.moveOut(scopeKey, collection, doc._id);
        const json = write.json ?? JSON.stringify(doc);
        const { _id, $version, $createdAt, $updatedAt } = doc;
        // The version this one replaces joins the history first. Conditioned on that version
        // alone: when it is stored, either the UPDATE or the upsert below replaces it (a
        // conflict needs another version), and when it is not, nothing is copied.
        if (write.expectedVersion > 0)
          this.#keepVersion.run(scopeKey, collection, _id, write.expectedVersion);
        const updated =
          write.expectedVersion > 0 &&
          this.#update.run(
            $version,
            $updatedAt,
            write.operation,
            write.apiKeyHint,
            json,
            $createdAt,
            $updatedAt,
            $version,
            scopeKey,
            collection,
            _id,
            write.expectedVersion,
            $createdAt,
          ).changes === 1;
        if (!updated && checkedByUpdate) {
          // Nothing written yet in this commit (one write, not from the trash).
          const conflicts = this.#check(scopeKey, collection, writes);
          if (conflicts.length > 0) return { ok: false, conflicts };
        }
        if (!updated)
          this.#upsert.run(
            scopeKey,
            collection,
            _id,
            $version,
            $createdAt,
            $updatedAt,
            write.operation,
            write.apiKeyHint,
            json,
            $createdAt,
            $updatedAt,
            $version,
          );
        // Versions are contiguous, so "all but the newest keepVersions" (the current one among
        // them, in its row) is a version bound; none to prune while the document has no more
        // versions than it keeps (every create).
        const pruneThrough = doc.$version - write.keepVersions;
        if (pruneThrough > 0) this.#pruneVersions.run(scopeKey, collection, doc._id, pruneThrough);
        const type = write.expectedVersion === 0 ? 'created' : 'updated';
        this.#log.append(scopeKey, collection, type, doc._id, json, timestamp);
      } else {
        // #check proved the document exists at the expected version.
        const before = this.#getCurrent.get(scopeKey, collection, write.id)!;
        if (write.trash) {
          this.#trash?.moveIn(scopeKey, collection, write.id, before.json, before.version, write.trash);
        }
        this.#deleteDoc.run(scopeKey, collection, write.id);
        this.#deleteHistory.run(scopeKey, collection, write.id);
        this.#log.append(scopeKey, collection, 'deleted', write.id, before.json, timestamp);
        // Erased for good: no trash entry, and the change log keeps only ids and metadata.
        if (write.erase) this.#trash?.eraseAll(scopeKey, collection, write.id);
      }
    }
    return { ok: true };
  }

  /** Every failing write condition (shared rules: ../writeConditions.ts). */
  #check(scopeKey: string, collection: string, writes: DocumentWrite[]): WriteConflict[] {
    assertContiguous(writes);
    const conflicts = findConflicts(
      writes,
      (id) => this.#getVersionNumber.get(scopeKey, collection, id)?.version ?? null,
    );
    for (const write of writes) {
      if (write.kind !== 'put' || !write.fromTrash) continue;
      const id = write.document._id;
      const trashed = this.#trash?.versionOf(scopeKey, collection, id) ?? null;
      if (trashed !== write.document.$version - 1 && !conflicts.some((c) => c.id === id))
        conflicts.push({ id, currentVersion: null });
    }
    return conflicts;
  }
}
