/**
 * Documents and their version history on SQLite. A commit is one IMMEDIATE transaction holding
 * the document rows, version rows (with pruning) and change-log rows (documents/writes.ts); the
 * change feed hears of it only after it committed.
 *
 * A document's current version is its `documents` row, with the operation and key hint that made
 * it; `versions` holds the versions before it (currentVersion.ts, which also covers rows from
 * before this layout).
 */

import type Database from 'better-sqlite3';
import type {
  CollectionInfo,
  CommitOptions,
  CommitResult,
  DataScope,
  DocumentRepository,
  DocumentWrite,
  FindQuery,
  FolioDocument,
  QueryPlan,
  StoredFilter,
  VersionInfo,
  WriteOperation,
} from '../../port.js';
import type { ChangeLog } from '../changes/changeLog.js';
import type { EmbeddedChangeFeed } from '../changes/changes.js';
import {
  collectionMatch,
  compoundPaths,
  type EmbeddedIndexes,
  sqlIndexNames,
} from '../indexes/declaredIndexes.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { AnswerCache, DEFAULT_QUERY_CACHE_BYTES, questionText } from '../query/answerCache.js';
import { compileFilter } from '../query/compileFilter.js';
import { indexedPathsOf } from '../query/indexedPaths.js';
import { openReader, readRow, selectSql } from '../query/selectSql.js';
import type { SqlParam } from '../query/sqlFragments.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';
import { StatementCache } from '../query/statementCache.js';
import { API_TEXT } from './apiText.js';
import { HOLDS_CURRENT_VERSION } from './currentVersion.js';
import { GroupCommit } from './groupCommit.js';
import { DEFAULT_DOCUMENT_CACHE_BYTES, DocumentTextCache } from './textCache.js';
import type { EmbeddedTrash } from './trash.js';
import { DocumentWrites, type Tx } from './writes.js';

/** Rows a scan hands out between two turns of the event loop. */
const SCAN_YIELD_EVERY = 256;

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
  /** The statements of a commit's body. */
  readonly #writes: DocumentWrites;
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

  readonly #indexes: EmbeddedIndexes;
  #examined = 0;

  /** Answers to list pages and counts (answerCache.ts); #apply makes a collection's stale. */
  readonly answers: AnswerCache;
  /** The API text of documents read lately (textCache.ts); #apply evicts what it writes. */
  readonly #texts: DocumentTextCache;

  constructor(
    db: Database.Database,
    log: ChangeLog,
    feed: EmbeddedChangeFeed,
    indexes: EmbeddedIndexes,
    trash?: EmbeddedTrash,
    answerBytes: number = DEFAULT_QUERY_CACHE_BYTES,
    documentBytes: number = DEFAULT_DOCUMENT_CACHE_BYTES,
  ) {
    this.#texts = new DocumentTextCache(documentBytes);
    this.answers = new AnswerCache(answerBytes);
    this.#indexes = indexes;
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
    this.#writes = new DocumentWrites(db, log, trash ?? null, indexes);
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
    this.#commits = this.#groupCommit(db);
  }

  /**
   * Commits arriving together share one transaction and one sync (groupCommit.ts); after it, the
   * feed's tail reads the new change-log rows (after a deferred group, it holds them back).
   */
  #groupCommit(db: Database.Database): GroupCommit<CommitArgs | typeof SYNC, Tx> {
    return new GroupCommit(
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
      // after a rollback: what it does outside the transaction, making answers stale, is idempotent).
      { optimistic: true },
    );
  }

  async get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null> {
    // The API text is the document in the API form, keys in the order fromStored gives them.
    const scopeKey = scopeKeyOf(scope);
    const text = this.#texts.text(
      scopeKey,
      collection,
      id,
      () => this.#getCurrent.get(scopeKey, collection, id)?.json ?? null,
    );
    return text === null ? null : (JSON.parse(text) as FolioDocument);
  }

  async commit(
    scope: DataScope,
    collection: string,
    writes: DocumentWrite[],
    options?: CommitOptions,
  ): Promise<CommitResult> {
    const scopeKey = scopeKeyOf(scope);
    try {
      // The group's queue is first in, first out: commits are applied in the order they are made.
      return await this.#commits.commit({ scopeKey, collection, writes }, options?.durable ?? true);
    } catch (error) {
      throw this.#writes.uniqueConflict(error, scopeKey, collection, writes) ?? error;
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
    this.#writes.syncMark();
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

  /** The body of one commit, inside the group's transaction; list answers of the collection go stale. */
  #apply(scopeKey: string, collection: string, writes: DocumentWrite[]): Tx {
    this.#documentsWritten += writes.length;
    // Evicted before the write; a commit that fails leaves only a miss behind.
    for (const write of writes) {
      this.#texts.evict(scopeKey, collection, write.kind === 'put' ? write.document._id : write.id);
    }
    return this.#writes.apply(scopeKey, collection, writes, {
      checked: () => {
        this.#indexes.documentsWritten(scopeKey, collection);
        this.answers.written(scopeKey, collection);
      },
    });
  }
}
