/**
 * Documents and their version history on SQLite. A commit is one IMMEDIATE transaction holding
 * the document rows, version rows (with pruning) and change-log rows (documents/writes.ts); the
 * change feed hears of it only after it committed.
 *
 * A document's current version is its `documents` row, with the operation and key hint that made
 * it; `versions` holds the versions before it (currentVersion.ts, which also covers rows from
 * before this layout).
 */

import Database from 'better-sqlite3';
import { projectStored } from '../documentQuery/projection.js';
import type {
  CollectionInfo,
  CommitOptions,
  CommitResult,
  DataScope,
  DocumentJson,
  DocumentRepository,
  DocumentWrite,
  FindQuery,
  FolioDocument,
  QueryPlan,
  StoredFilter,
  VersionInfo,
  WriteOperation,
} from '../port.js';
import { fromStored, toStored } from '../storedForm.js';
import { API_TEXT } from './apiText.js';
import type { ChangeLog } from './changeLog.js';
import type { EmbeddedChangeFeed } from './changes.js';
import {
  compileFilterOnce,
  compileKeyset,
  compileSort,
  indexedPathsOf,
  type SqlParam,
} from './compileQuery.js';
import { HOLDS_CURRENT_VERSION } from './currentVersion.js';
import { collectionMatch, compoundPaths, type EmbeddedIndexes, sqlIndexNames } from './declaredIndexes.js';
import { DEFAULT_DOCUMENT_CACHE_BYTES, DocumentJsonCache } from './documentCache.js';
import { DocumentWrites, type Tx } from './documents/writes.js';
import { GroupCommit } from './groupCommit.js';
import { countKey, DEFAULT_QUERY_CACHE_BYTES, pageKey, QueryAnswerCache } from './queryCache.js';
import { registerQueryFunctions } from './queryFunctions.js';
import { scopeKeyOf } from './scopeKey.js';
import { BOUND_COUNT } from './sqlLimit.js';
import { StatementCache } from './statementCache.js';
import type { EmbeddedTrash } from './trash.js';

/** A reader only waits while another connection recovers the WAL; as long as writers wait. */
const READER_BUSY_TIMEOUT_MS = 5000;
/** Rows a scan hands out between two turns of the event loop. */
const SCAN_YIELD_EVERY = 256;

/** The barrier `sync()` commits: one row rewritten, so the group has something to sync. */
const SYNC = Symbol('sync');

interface CommitArgs {
  scopeKey: string;
  collection: string;
  writes: DocumentWrite[];
}

/** A document a commit wrote (its API text and version), or deleted (null). */
interface WrittenEntry {
  scopeKey: string;
  collection: string;
  id: string;
  entry: DocumentJson | null;
}

/**
 * The text a read of the row would build (#getJson: the written text with the metadata moved to
 * the end, in this order), when the written text already is it, as for every document the
 * services build; null otherwise (the document is then only evicted, not cached).
 */
export function readBackText(json: string, doc: FolioDocument): string | null {
  const tail =
    `"$createdAt":${JSON.stringify(doc.$createdAt)},"$updatedAt":${JSON.stringify(doc.$updatedAt)},` +
    `"$version":${doc.$version}}`;
  return json.endsWith(tail) ? json : null;
}

export class EmbeddedDocuments implements DocumentRepository {
  readonly #log: ChangeLog;
  readonly #feed: EmbeddedChangeFeed;
  /** The database file, for the scans' own read connections. */
  readonly #file: string;
  /** Compiled queries differ by filter shape, so their statements are cached by SQL text. */
  readonly #queries: StatementCache;

  readonly #getJson: Database.Statement<[string, string, string], { json: string; version: number }>;
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
  /** Runs reads in one read transaction (DEFERRED: it takes no write lock). */
  readonly #readTogether: (read: () => void) => void;
  #examined = 0;

  /**
   * API texts of documents read or written lately (documentCache.ts): a write evicts what it
   * writes before its commit and puts the new text back once the group has committed.
   */
  readonly cache: DocumentJsonCache;
  /**
   * Answers to list pages and counts (queryCache.ts), per collection until the collection is
   * next written: #apply drops them before it writes.
   */
  readonly answers: QueryAnswerCache;
  /** The current group's writes, for the cache once it commits (#cacheWritten). */
  readonly #written: WrittenEntry[] = [];

  constructor(
    db: Database.Database,
    log: ChangeLog,
    feed: EmbeddedChangeFeed,
    indexes: EmbeddedIndexes,
    cacheBytes: number = DEFAULT_DOCUMENT_CACHE_BYTES,
    trash?: EmbeddedTrash,
    answerBytes: number = DEFAULT_QUERY_CACHE_BYTES,
  ) {
    this.cache = new DocumentJsonCache(cacheBytes);
    this.answers = new QueryAnswerCache(answerBytes);
    this.#indexes = indexes;
    this.#readTogether = db.transaction((read: () => void) => read());
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
    this.#getJson = db.prepare(
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
        beforeGroup: () => {
          this.#written.length = 0;
          this.#log.groupStarted();
        },
        beforeDeferred: () => this.#feed.held(),
        afterCommit: (durable) => {
          this.#log.groupCommitted();
          this.#cacheWritten();
          this.#feed.committed(durable);
        },
      },
      // Each commit keeps its own outcome; savepoints only once one fails (#apply runs again
      // after a rollback: what it does outside the transaction, cache evictions, is idempotent).
      { optimistic: true },
    );
  }

  async get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null> {
    // The API text (from the cache when there) is the document in the API form, keys in the
    // order fromStored gives them: parsing it is the same document, and a PATCH or PUT reads
    // the one it replaces from memory when it was read or written lately.
    const entry = await this.getJson(scope, collection, id);
    return entry ? (JSON.parse(entry.json) as FolioDocument) : null;
  }

  async getJson(scope: DataScope, collection: string, id: string): Promise<DocumentJson | null> {
    return this.#json(scopeKeyOf(scope), collection, id);
  }

  /** The document's API text and version: from the cache, else built by SQLite and cached. */
  #json(scopeKey: string, collection: string, id: string): DocumentJson | null {
    return this.cache.get(scopeKey, collection, id) ?? this.#built(scopeKey, collection, id);
  }

  /** The document's API text and version built by SQLite, then cached; null when there is none. */
  #built(scopeKey: string, collection: string, id: string): DocumentJson | null {
    const row = this.#getJson.get(scopeKey, collection, id);
    if (!row) return null;
    // A fresh object: the statement's row is not ours to keep.
    const entry = { json: row.json, version: row.version };
    this.cache.set(scopeKey, collection, id, entry);
    return entry;
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
    const usable = this.#usable(scope, collection);
    // The array probe and the query run in one synchronous step: no write comes between.
    const arrayFree = this.#arrayFree(scope, collection, query, usable);
    const { sql, params } = selectSql(scope, collection, query, usable, false, arrayFree);
    const rows = this.#queries.get<{ body: string }>(sql).all(...params);
    return rows.map((row) => readRow(row.body, query.projection));
  }

  async findJson(
    scope: DataScope,
    collection: string,
    query: Omit<FindQuery, 'projection'>,
  ): Promise<readonly string[]> {
    // The answer and its caching in one synchronous step (queryCache.ts); a hit compiles nothing.
    const scopeKey = scopeKeyOf(scope);
    const key = pageKey(query);
    const known = this.answers.get(scopeKey, collection, key);
    if (known !== undefined) return known as readonly string[];
    const usable = this.#usable(scope, collection);
    const arrayFree = this.#arrayFree(scope, collection, query, usable);
    // The page's ids (the index that orders the page usually holds them: no row is read), then
    // each document's API text as a GET reads it: from the cache, else built by SQLite (and
    // cached). No parse, fromStored and re-stringify per row. One synchronous step, so no write
    // comes between the ids and the texts.
    const { sql, params } = selectSql(scope, collection, query, usable, false, arrayFree, 'd.id');
    const ids = this.#queries
      .get<{ body: string }>(sql)
      .pluck()
      .all(...params) as unknown as string[];
    const texts: string[] = new Array(ids.length);
    let misses = 0;
    for (let i = 0; i < ids.length; i++) {
      const cached = this.cache.get(scopeKey, collection, ids[i]!);
      if (cached) texts[i] = cached.json;
      else misses += 1;
    }
    if (misses > 0) {
      const fill = () => {
        for (let i = 0; i < ids.length; i++) texts[i] ??= this.#built(scopeKey, collection, ids[i]!)!.json;
      };
      // Each statement outside a transaction takes and drops a WAL read lock (two fcntl calls,
      // about 2 µs, more than reading a row); the texts of a page read in one read transaction
      // take it once.
      if (misses > 1) this.#readTogether(fill);
      else fill();
    }
    this.answers.set(scopeKey, collection, key, texts);
    return texts;
  }

  async *scan(scope: DataScope, collection: string, query: FindQuery): AsyncGenerator<FolioDocument> {
    const { sql, params } = selectSql(scope, collection, query, this.#usable(scope, collection));
    // An open iterator makes better-sqlite3 refuse every write on its connection, so a scan
    // reads on a read-only connection of its own: one WAL snapshot, writers never wait.
    const reader = openReader(this.#file);
    try {
      const rows = reader.prepare<SqlParam[], { body: string }>(sql).iterate(...params);
      let sinceYield = 0;
      for (const row of rows) {
        yield readRow(row.body, query.projection);
        // A consumer that never awaits I/O would otherwise hold the event loop for the whole scan.
        if (++sinceYield >= SCAN_YIELD_EVERY) {
          sinceYield = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    } finally {
      reader.close();
    }
  }

  async *scanJson(scope: DataScope, collection: string, query: FindQuery): AsyncGenerator<string[]> {
    // The rows' API text, as `scan` reads before parsing it; a projection has no text here.
    const { projection: _none, ...whole } = query;
    const { sql, params } = selectSql(scope, collection, whole, this.#usable(scope, collection));
    const reader = openReader(this.#file);
    try {
      const rows = reader
        .prepare<SqlParam[], string>(sql)
        .pluck()
        .iterate(...params);
      let page: string[] = [];
      for (const text of rows) {
        page.push(text);
        // One turn of the event loop per page, as `scan` gives every SCAN_YIELD_EVERY rows.
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
    // The answer and its caching in one synchronous step (queryCache.ts); a hit compiles nothing.
    const scopeKey = scopeKeyOf(scope);
    const key = countKey(filter, upTo);
    const known = this.answers.get(scopeKey, collection, key);
    if (known !== undefined) return known as number;
    const usable = this.#usable(scope, collection);
    const arrayFree = this.#arrayFree(scope, collection, { filter, sort: [] }, usable);
    const target = collectionMatch(scopeKey, collection, usable);
    const where = compileFilterOnce(filter, usable, arrayFree, target.literal);
    const matches = `FROM documents d WHERE ${target.sql} AND (${where.sql})`;
    const sql =
      upTo === undefined
        ? `SELECT count(*) AS n ${matches}`
        : `SELECT count(*) AS n FROM (SELECT 1 ${matches} LIMIT ${BOUND_COUNT})`;
    const params = [...target.params, ...where.params];
    if (upTo !== undefined) params.push(upTo);
    const n = this.#queries.get<{ n: number }>(sql).get(...params)?.n ?? 0;
    this.answers.set(scopeKey, collection, key, n);
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

  /** The body of one commit, inside the group's transaction; the caches learn what it wrote. */
  #apply(scopeKey: string, collection: string, writes: DocumentWrite[]): Tx {
    this.#documentsWritten += writes.length;
    // What the cache learns once the group commits; recorded last, so a commit that throws
    // part-way (its savepoint rolled back) records nothing. A commit of many documents (an
    // import batch) only evicts: caching them would push out the documents being read.
    const written: WrittenEntry[] = [];
    const keepTexts = writes.length === 1;
    const tx = this.#writes.apply(scopeKey, collection, writes, {
      checked: () => {
        this.#indexes.documentsWritten(scopeKey, collection);
        this.answers.written(scopeKey, collection);
      },
      writing: (id) => this.cache.evict(scopeKey, collection, id),
      wrote: (id, put) => {
        const readBack = put && keepTexts ? readBackText(put.json, put.doc) : null;
        const entry = readBack === null ? null : { json: readBack, version: put!.doc.$version };
        written.push({ scopeKey, collection, id, entry });
      },
    });
    if (tx.ok) for (const item of written) this.#written.push(item);
    return tx;
  }

  /**
   * After a group's commit: each document a single-document commit wrote goes into the cache as
   * written (its text is what a read would build: documentJson tests); a deleted one, or one of
   * a many-document commit, stays out. In write order, so the last write of a document in the
   * group wins. A group that failed never gets here, and the next group starts with an empty
   * list.
   */
  #cacheWritten(): void {
    for (const { scopeKey, collection, id, entry } of this.#written) {
      if (entry) this.cache.set(scopeKey, collection, id, entry);
      else this.cache.evict(scopeKey, collection, id);
    }
    this.#written.length = 0;
  }
}

/** The SELECT behind `find` and `scan`: filter, order (by `_id` when none), limit and skip. */
export function selectSql(
  scope: DataScope,
  collection: string,
  query: FindQuery,
  indexed: ReadonlySet<string>,
  /** Count the rows visited (`folio_examined()` sits before the filter, after the index constraints). */
  counted = false,
  /** Indexed paths without arrays now (EmbeddedIndexes.arrayFree); none on a scan's own connection. */
  arrayFree: ReadonlySet<string> = new Set(),
  /** What each row gives: the API text (readRow parses it), or another column. */
  select = API_TEXT,
): { sql: string; params: SqlParam[] } {
  // Literals for a collection with declarations: their indexes are partial (declaredIndexes.ts).
  const target = collectionMatch(scopeKeyOf(scope), collection, indexed);
  const where = compileFilterOnce(query.filter, indexed, arrayFree, target.literal);
  const examined = counted ? 'folio_examined() AND ' : '';
  const order =
    query.sort.length > 0 ? compileSort(query.sort, indexed, arrayFree) : { sql: 'd.id', params: [] };
  // A cursor page: its position as a top-level condition, which the planner seeks to.
  const keyset =
    query.after && query.sort.length > 0
      ? compileKeyset(query.sort, query.after, indexed, arrayFree)
      : { sql: '1', params: [] };
  const sql =
    `SELECT ${select} AS body FROM documents d WHERE ${target.sql} AND ${keyset.sql} AND ${examined}(${where.sql}) ` +
    `ORDER BY ${order.sql} LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}`;
  // MongoDB reads limit 0 as "no limit"; SQLite spells that -1.
  const limit = query.limit > 0 ? query.limit : -1;
  return {
    sql,
    params: [...target.params, ...keyset.params, ...where.params, ...order.params, limit, query.skip],
  };
}

/** A row's API text as the document, or its projection (computed on the stored form's paths). */
function readRow(text: string, projection: string[] | undefined): FolioDocument {
  const doc = JSON.parse(text) as FolioDocument;
  return projection ? fromStored(projectStored(toStored(doc), projection)) : doc;
}

/** A read-only connection to the same file, with the functions compiled queries call. */
function openReader(file: string): Database.Database {
  const reader = new Database(file, { readonly: true, fileMustExist: true, timeout: READER_BUSY_TIMEOUT_MS });
  try {
    registerQueryFunctions(reader);
  } catch (error) {
    reader.close();
    throw error;
  }
  return reader;
}
