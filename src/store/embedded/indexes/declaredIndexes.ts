/**
 * Indexes declared on a collection, on SQLite. Each declaration is a row of `declared_indexes`
 * plus SQLite expression indexes over the stored JSON:
 *
 * - per declared stored path of a collection, two keys over the value at P:
 *   `(scope, collection, K)` with K = the value (`json_extract`), except that an array there
 *   gives a marker, above every value in the `high` index (an empty blob: SQLite orders
 *   NULL < numbers < text < blobs) and below every number in the `low` one (-Infinity, which no
 *   JSON number reads as). MongoDB matches an array by its elements, which one key cannot show,
 *   so the compiler's sargable ranges reach the marker in one index range: `K > x` on `high`,
 *   `K < x` on `low`, `K IN (…, marker)` for equality (see `indexedForm` in query/indexedForms.ts).
 * - per declared top-level path, a sort key `(scope, collection, S, id)` with S = `sortKeySql`: the
 *   ascending MongoDB sort key (`folio_sort_key`, bytes in BSON order; an array by its smallest
 *   element). `ORDER BY S, id` walks it, in either direction while no document holds an array
 *   there (then an array's largest element, the descending key, equals its smallest); a cursor
 *   page seeks into it. The compiler checks for arrays with the `high` index (`arrayFree`).
 * - per declaration of two or more top-level paths, a compound sort key
 *   `(scope, collection, S1, S2, …, id)`: equality on the first paths and a sort on the next walk
 *   it in order (`filter[category]=x&sort=price` reads its 20 rows instead of sorting the
 *   category's matches).
 * - per unique declaration: a partial unique index over the declared paths' values, limited to
 *   the collection (`WHERE scope = '…' AND collection = '…'`), keyed by `uniqueKeySql`: SQL
 *   NULL never conflicts, so documents without the field are not constrained, while a JSON
 *   `null` is a value that conflicts with another `null`, as on MongoDB.
 *
 * Every one of them is partial, limited to its collection (`collectionCondition`): a write
 * elsewhere in the file neither enters nor computes it. (Indexes shared by path across
 * collections made every write pay for every path declared anywhere: 30 paths declared in
 * another collection cut creates from 17,600 to 1,900 per second.) SQLite uses a partial index
 * only for a query naming the same condition, so queries over a collection with declarations
 * name its scope and collection as literals (`collectionMatch`).
 *
 * A build runs in one IMMEDIATE transaction: writers to the database wait for it (measured in
 * docs/querying.md). The store is one process (data directory lock), so the catalogue is cached.
 * The key expressions are indexKeys.ts's, which the query compiler writes too.
 */
import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import {
  type DataScope,
  DuplicateError,
  type IndexDefinition,
  type IndexRecord,
  type IndexRepository,
} from '../../port.js';
import { withSortsOnDisk } from '../database/tempStore.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';
import { StatementCache } from '../query/statementCache.js';
import {
  ARRAY_MARKER,
  indexKeySql,
  type KeySide,
  sortKeySql,
  sqlLiteral,
  uniqueKeySql,
} from './indexKeys.js';

/** Ids of duplicates a failed unique build reports. */
const MAX_REPORTED_IDS = 20;
/** Prepared array probes kept (one per collection and path), least recently used out first. */
const MAX_CACHED_PROBES = 256;
/** Collections whose array probe answers are kept (each a few paths), least recently used out first. */
const MAX_ARRAY_FREE_COLLECTIONS = 10_000;

interface Row {
  name: string;
  definition: string;
  state: IndexRecord['state'];
  failure: string | null;
  created_at: string;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}

/** Names of the SQLite indexes behind declarations, one set per collection. */
export const sqlIndexNames = {
  high: (scopeKey: string, collection: string, path: string) =>
    `fx_high_${digest(JSON.stringify([scopeKey, collection, path]))}`,
  low: (scopeKey: string, collection: string, path: string) =>
    `fx_low_${digest(JSON.stringify([scopeKey, collection, path]))}`,
  sort: (scopeKey: string, collection: string, path: string) =>
    `fx_sort_${digest(JSON.stringify([scopeKey, collection, path]))}`,
  compound: (scopeKey: string, collection: string, paths: readonly string[]) =>
    `fx_sortn_${digest(JSON.stringify([scopeKey, collection, paths]))}`,
  unique: (scopeKey: string, collection: string, name: string) =>
    `fx_unique_${digest(JSON.stringify([scopeKey, collection, name]))}`,
};

/** The prefixes of the key and sort index names (all but the unique ones). */
const PATH_INDEX_PREFIXES = ['fx_high_', 'fx_low_', 'fx_sort_', 'fx_sortn_'];

/** The paths of a declaration's compound sort index, or null when it has none. */
export function compoundPaths(index: Pick<IndexDefinition, 'fields'>): string[] | null {
  const paths = index.fields.map((f) => f.path);
  return paths.length > 1 && paths.every((p) => !p.includes('.')) ? paths : null;
}

/** The SQLite indexes a declaration's fields need besides its unique one: name → build. */
type Wanted = Map<string, () => void>;

/** The WHERE of a collection's partial indexes: its scope and collection as literals. */
export function collectionCondition(scopeKey: string, collection: string): string {
  return `scope = ${sqlLiteral(scopeKey)} AND collection = ${sqlLiteral(collection)}`;
}

/**
 * A query's condition on its collection, with the table alias `d`. Literals when the collection
 * has usable declared indexes, so the planner can prove their partial indexes apply (`literal`
 * is then that condition, for `compileFilter`); parameters otherwise (one prepared statement
 * per query shape, whatever the collection).
 */
export function collectionMatch(
  scopeKey: string,
  collection: string,
  usable: ReadonlySet<string>,
): { sql: string; params: string[]; literal: string | null } {
  if (usable.size === 0) {
    return { sql: 'd.scope = ? AND d.collection = ?', params: [scopeKey, collection], literal: null };
  }
  const sql = `d.scope = ${sqlLiteral(scopeKey)} AND d.collection = ${sqlLiteral(collection)}`;
  return { sql, params: [], literal: sql };
}

/** The key of one scope's collection in this module's per-collection maps. */
function collectionKey(scopeKey: string, collection: string): string {
  return `${scopeKey}\0${collection}`;
}

export class EmbeddedIndexes implements IndexRepository {
  /** Declarations per `scopeKey\0collection`; the embedded store is the file's only writer. */
  readonly #cache = new Map<string, IndexRecord[]>();
  /** Unique SQL index name → its declaration, to name the index a conflicting write hit. */
  readonly #uniqueByName = new Map<string, { collection: string; scopeKey: string; index: IndexRecord }>();
  /** Array probes by SQL text (one per indexed path). */
  readonly #arrayProbes: StatementCache;
  /**
   * What the array probes found, per `scopeKey\0collection` and path (true: no array), kept
   * until the next write to the collection (`documentsWritten`). A probe was about a fifth of a
   * filtered, sorted list's time in the store; a collection read more often than written now
   * probes once per write.
   */
  readonly #arrayFreeKnown = new LRUCache<string, Map<string, boolean>>({ max: MAX_ARRAY_FREE_COLLECTIONS });

  constructor(private readonly db: Database.Database) {
    this.#arrayProbes = new StatementCache(db, MAX_CACHED_PROBES);
    const ready: Array<{ scopeKey: string; collection: string; index: IndexRecord }> = [];
    for (const row of db
      .prepare<[], Row & { scope: string; collection: string }>(
        'SELECT scope, collection, name, definition, state, failure, created_at FROM declared_indexes',
      )
      .all()) {
      const index = recordOf(row);
      if (index.state === 'ready') ready.push({ scopeKey: row.scope, collection: row.collection, index });
      if (index.unique && index.state === 'ready') {
        this.#uniqueByName.set(sqlIndexNames.unique(row.scope, row.collection, index.name), {
          scopeKey: row.scope,
          collection: row.collection,
          index,
        });
      }
    }
    this.#reconcile(ready);
  }

  /**
   * Make the per-path indexes in the file exactly those of the ready declarations: builds the
   * missing ones (files of older versions had one index per path shared by every collection,
   * or no sort index) and drops the rest.
   */
  #reconcile(ready: Array<{ scopeKey: string; collection: string; index: IndexRecord }>): void {
    const wanted: Wanted = new Map();
    for (const { scopeKey, collection, index } of ready) this.#wanted(scopeKey, collection, index, wanted);
    const existing = this.db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'documents'",
      )
      .all()
      .map((r) => r.name)
      .filter((name) => PATH_INDEX_PREFIXES.some((prefix) => name.startsWith(prefix)));
    const stale = existing.filter((name) => !wanted.has(name));
    const missing = [...wanted].filter(([name]) => !existing.includes(name));
    if (stale.length === 0 && missing.length === 0) return;
    this.#changeIndexes(() => {
      for (const name of stale) this.db.exec(`DROP INDEX IF EXISTS ${name}`);
      for (const [, build] of missing) build();
    });
  }

  /**
   * Index builds and drops in one IMMEDIATE transaction (writers wait), their whole-table sorts
   * in files on disk; then fresh statistics, without which the planner cannot tell a selective
   * key lookup from a walk of the primary key in order.
   */
  #changeIndexes(work: () => void): void {
    withSortsOnDisk(this.db, () => this.db.transaction(work).immediate());
    this.db.exec('ANALYZE documents');
  }

  /** Adds the key and sort indexes `index` needs (by name) to `wanted`. */
  #wanted(
    scopeKey: string,
    collection: string,
    index: Pick<IndexDefinition, 'fields'>,
    wanted: Wanted,
  ): void {
    for (const { path } of index.fields) {
      for (const side of ['high', 'low'] as const) {
        wanted.set(sqlIndexNames[side](scopeKey, collection, path), () =>
          this.#createKeyIndex(scopeKey, collection, path, side),
        );
      }
      if (!path.includes('.')) {
        wanted.set(sqlIndexNames.sort(scopeKey, collection, path), () =>
          this.#createSortIndex(scopeKey, collection, path),
        );
      }
    }
    const paths = compoundPaths(index);
    if (paths) {
      wanted.set(sqlIndexNames.compound(scopeKey, collection, paths), () =>
        this.#createCompoundSortIndex(scopeKey, collection, paths),
      );
    }
  }

  async list(scope: DataScope, collection: string): Promise<IndexRecord[]> {
    return this.declared(scopeKeyOf(scope), collection);
  }

  /** The declarations of one collection (cached). */
  declared(scopeKey: string, collection: string): IndexRecord[] {
    const key = collectionKey(scopeKey, collection);
    let records = this.#cache.get(key);
    if (!records) {
      records = this.db
        .prepare<[string, string], Row>(
          'SELECT name, definition, state, failure, created_at FROM declared_indexes ' +
            'WHERE scope = ? AND collection = ? ORDER BY created_at, name',
        )
        .all(scopeKey, collection)
        .map(recordOf);
      this.#cache.set(key, records);
    }
    return records;
  }

  /**
   * Stored paths whose key and sort indexes the compiler may use for this collection: every
   * top-level field of a ready declaration (each path has its own indexes, see the header).
   */
  usablePaths(scopeKey: string, collection: string): ReadonlySet<string> {
    const paths = new Set<string>();
    for (const index of this.declared(scopeKey, collection)) {
      if (index.state !== 'ready') continue;
      for (const { path } of index.fields) if (!path.includes('.')) paths.add(path);
    }
    return paths;
  }

  /**
   * The `usable` paths that hold no array in any document of the collection now: their sort
   * key is then one value per document, the same both ways. One probe of the `high` index per
   * path; the caller runs its query in the same synchronous step, so no write comes between.
   */
  arrayFree(scopeKey: string, collection: string, paths: Iterable<string>): ReadonlySet<string> {
    const free = new Set<string>();
    const key = collectionKey(scopeKey, collection);
    let known = this.#arrayFreeKnown.get(key);
    if (!known) {
      known = new Map();
      this.#arrayFreeKnown.set(key, known);
    }
    for (const path of paths) {
      let pathFree = known.get(path);
      if (pathFree === undefined) {
        // The collection as literals: the `high` index is partial (see the header).
        const sql =
          `SELECT EXISTS (SELECT 1 FROM documents WHERE ${collectionCondition(scopeKey, collection)} AND ` +
          `${indexKeySql(path, 'high', 'body')} = ${ARRAY_MARKER.high}) AS arrays`;
        pathFree = this.#arrayProbes.get<{ arrays: number }>(sql).get()?.arrays === 0;
        known.set(path, pathFree);
      }
      if (pathFree) free.add(path);
    }
    return free;
  }

  /**
   * Documents of the collection are about to be written (called before the write, in the same
   * synchronous step): what `arrayFree` knew of it may no longer hold.
   */
  documentsWritten(scopeKey: string, collection: string): void {
    if (this.#arrayFreeKnown.size > 0) this.#arrayFreeKnown.delete(collectionKey(scopeKey, collection));
  }

  /** The declaration behind a unique SQL index a write violated, if it is one of ours. */
  uniqueIndexNamed(
    sqlName: string,
  ): { collection: string; scopeKey: string; index: IndexRecord } | undefined {
    return this.#uniqueByName.get(sqlName);
  }

  async create(
    scope: DataScope,
    collection: string,
    index: IndexDefinition,
    maxIndexes: number,
  ): Promise<IndexRecord | null> {
    const scopeKey = scopeKeyOf(scope);
    // Counted and recorded in one synchronous step: no other create comes between.
    const declared = this.declared(scopeKey, collection);
    if (declared.some((i) => i.name === index.name)) throw new DuplicateError('name');
    if (declared.length >= maxIndexes) return null;
    return this.#declare(scopeKey, collection, index, new Date().toISOString());
  }

  /**
   * A declaration read from a snapshot (`SnapshotRepository.write`): recorded with its own
   * creation time and built over the documents already there, replacing one of the same name.
   */
  async restore(scope: DataScope, collection: string, record: IndexRecord): Promise<IndexRecord> {
    const scopeKey = scopeKeyOf(scope);
    if (this.declared(scopeKey, collection).some((i) => i.name === record.name)) {
      await this.drop(scope, collection, record.name);
    }
    const { name, fields, unique } = record;
    return this.#declare(scopeKey, collection, { name, fields, unique }, record.createdAt);
  }

  /** Record the declaration as building, build it, and record how that went. */
  #declare(scopeKey: string, collection: string, index: IndexDefinition, createdAt: string): IndexRecord {
    const record: IndexRecord = { ...index, state: 'building', createdAt };
    try {
      this.db
        .prepare(
          'INSERT INTO declared_indexes (scope, collection, name, definition, state, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(
          scopeKey,
          collection,
          index.name,
          JSON.stringify(definitionOf(index)),
          'building',
          record.createdAt,
        );
    } catch (error) {
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
        throw new DuplicateError('name');
      throw error;
    } finally {
      this.#forget(scopeKey, collection);
    }
    const built = this.#build(scopeKey, collection, index);
    const finished: IndexRecord = built.ok
      ? { ...record, state: 'ready' }
      : { ...record, state: 'failed', failure: built.failure };
    this.db
      .prepare(
        'UPDATE declared_indexes SET state = ?, failure = ? WHERE scope = ? AND collection = ? AND name = ?',
      )
      .run(
        finished.state,
        finished.failure ? JSON.stringify(finished.failure) : null,
        scopeKey,
        collection,
        index.name,
      );
    this.#forget(scopeKey, collection);
    if (finished.unique && finished.state === 'ready') {
      this.#uniqueByName.set(sqlIndexNames.unique(scopeKey, collection, index.name), {
        scopeKey,
        collection,
        index: finished,
      });
    }
    return finished;
  }

  async drop(scope: DataScope, collection: string, name: string): Promise<boolean> {
    const scopeKey = scopeKeyOf(scope);
    const existing = this.declared(scopeKey, collection).find((i) => i.name === name);
    if (!existing) return false;
    this.db
      .transaction(() => {
        this.db
          .prepare('DELETE FROM declared_indexes WHERE scope = ? AND collection = ? AND name = ?')
          .run(scopeKey, collection, name);
        this.db.exec(`DROP INDEX IF EXISTS ${sqlIndexNames.unique(scopeKey, collection, name)}`);
        // Indexes another declaration of this collection still needs stay.
        const kept: Wanted = new Map();
        for (const other of this.declared(scopeKey, collection)) {
          if (other.name !== name && other.state === 'ready') this.#wanted(scopeKey, collection, other, kept);
        }
        const mine: Wanted = new Map();
        this.#wanted(scopeKey, collection, existing, mine);
        for (const indexName of mine.keys()) {
          if (!kept.has(indexName)) this.db.exec(`DROP INDEX IF EXISTS ${indexName}`);
        }
      })
      .immediate();
    this.#uniqueByName.delete(sqlIndexNames.unique(scopeKey, collection, name));
    this.#forget(scopeKey, collection);
    return true;
  }

  #forget(scopeKey: string, collection: string): void {
    this.#cache.delete(collectionKey(scopeKey, collection));
  }

  /** Build the SQLite indexes of one declaration, in one transaction. */
  #build(
    scopeKey: string,
    collection: string,
    index: IndexDefinition,
  ): { ok: true } | { ok: false; failure: NonNullable<IndexRecord['failure']> } {
    const paths = index.fields.map((f) => f.path);
    try {
      this.#changeIndexes(() => {
        if (index.unique) {
          const keys = paths.map((p) => uniqueKeySql(p, 'body')).join(', ');
          this.db.exec(
            `CREATE UNIQUE INDEX IF NOT EXISTS ${sqlIndexNames.unique(scopeKey, collection, index.name)} ` +
              `ON documents (${keys}) WHERE ${collectionCondition(scopeKey, collection)}`,
          );
        }
        const wanted: Wanted = new Map();
        this.#wanted(scopeKey, collection, index, wanted);
        for (const build of wanted.values()) build();
      });
      return { ok: true };
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_CONSTRAINT_UNIQUE') throw error;
      return {
        ok: false,
        failure: {
          message: 'documents share a value of the unique index',
          ids: this.#duplicateIds(scopeKey, collection, paths),
        },
      };
    }
  }

  /** One of a path's two key indexes, limited to the collection. */
  #createKeyIndex(scopeKey: string, collection: string, path: string, side: KeySide): void {
    this.db.exec(
      `CREATE INDEX IF NOT EXISTS ${sqlIndexNames[side](scopeKey, collection, path)} ON documents ` +
        `(scope, collection, ${indexKeySql(path, side, 'body')}) WHERE ${collectionCondition(scopeKey, collection)}`,
    );
  }

  /** The compound sort index of a declaration's top-level paths, limited to the collection. */
  #createCompoundSortIndex(scopeKey: string, collection: string, paths: readonly string[]): void {
    const keys = paths.map((path) => sortKeySql(path, 'body')).join(', ');
    this.db.exec(
      `CREATE INDEX IF NOT EXISTS ${sqlIndexNames.compound(scopeKey, collection, paths)} ON documents ` +
        `(scope, collection, ${keys}, id) WHERE ${collectionCondition(scopeKey, collection)}`,
    );
  }

  /** The sort index of a top-level path (dotted paths sort without one), limited to the collection. */
  #createSortIndex(scopeKey: string, collection: string, path: string): void {
    if (path.includes('.')) return;
    this.db.exec(
      `CREATE INDEX IF NOT EXISTS ${sqlIndexNames.sort(scopeKey, collection, path)} ON documents ` +
        `(scope, collection, ${sortKeySql(path, 'body')}, id) WHERE ${collectionCondition(scopeKey, collection)}`,
    );
  }

  #duplicateIds(scopeKey: string, collection: string, paths: string[]): string[] {
    const keys = paths.map((p) => uniqueKeySql(p, 'body'));
    const tuple = keys.join(', ');
    const notNull = keys.map((k) => `${k} IS NOT NULL`).join(' AND ');
    const sql =
      `SELECT id FROM documents WHERE scope = ? AND collection = ? AND ${notNull} AND (${tuple}) IN ` +
      `(SELECT ${tuple} FROM documents WHERE scope = ? AND collection = ? AND ${notNull} GROUP BY ${tuple} HAVING count(*) > 1) ` +
      `ORDER BY id LIMIT ${BOUND_COUNT}`;
    return this.db
      .prepare<[string, string, string, string, number], { id: string }>(sql)
      .all(scopeKey, collection, scopeKey, collection, MAX_REPORTED_IDS)
      .map((r) => r.id);
  }
}

function definitionOf(index: IndexDefinition): Pick<IndexDefinition, 'fields' | 'unique'> {
  return { fields: index.fields, unique: index.unique };
}

function recordOf(row: Row): IndexRecord {
  const definition = JSON.parse(row.definition) as Pick<IndexDefinition, 'fields' | 'unique'>;
  return {
    name: row.name,
    fields: definition.fields,
    unique: definition.unique,
    state: row.state,
    createdAt: row.created_at,
    ...(row.failure ? { failure: JSON.parse(row.failure) as NonNullable<IndexRecord['failure']> } : {}),
  };
}
