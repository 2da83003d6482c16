/**
 * Documents and their version history on MongoDB. A commit is one multi-document transaction
 * over the document collection and its version sidecar; the change event is MongoDB's own
 * change-stream entry for the document write (changes.ts).
 */
import type {
  ClientSession,
  Collection,
  Document,
  Filter,
  FindOptions,
  MongoClient,
  Sort,
  SortDirection,
} from 'mongodb';
import { positionFilter } from '../../documentQuery/cursor.js';
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
} from '../../port.js';
import { fromStored, type StoredDocument } from '../../storedForm.js';
import { assertContiguous, findConflicts } from '../../writeConditions.js';
import type { ClusterClock } from '../changes/clusterClock.js';
import type { MongoLimits } from '../database/limits.js';
import { isDuplicateKeyError, queryRejection } from '../database/serverErrors.js';
import { inTransaction } from '../database/transactions.js';
import {
  conflictingIndexName,
  failedWriteDocument,
  planOfExplain,
  sameKeyFilter,
} from '../indexes/declaredIndexes.js';
import { listFolioCollections } from '../layout/collectionCatalog.js';
import type { CollectionRegistry } from '../layout/collections.js';
import { assertCollectionName, projectDbName, versionsCollectionName } from '../layout/naming.js';
import { applyTrashSteps, ensureTrashCollections, trashConflicts, trashSteps } from './trash.js';
import { batchIds, matchesExpected, planWrites, type VersionRecord } from './writePlan.js';

/** Whole-commit attempts after a duplicate key or a count mismatch (see commit()). */
const MAX_COMMIT_ATTEMPTS = 5;

/** The conditions held at the snapshot but a write disagreed: someone else got in between. */
class ConcurrentChange extends Error {
  constructor() {
    super('a document changed between the version check and the write');
    this.name = 'ConcurrentChange';
  }
}

/** Ordered inclusion projection; a path inside another requested path is dropped (MongoDB
 * refuses both `a` and `a.b` in one projection, and `a` already includes `a.b`). */
export function toProjection(paths: readonly string[]): Document {
  const unique = [...new Set(paths)];
  const kept = unique.filter(
    (path) => !unique.some((other) => other !== path && path.startsWith(`${other}.`)),
  );
  // fromEntries defines own properties: a client's path never reaches Object.prototype.
  return Object.fromEntries([['_id', 1], ...kept.map((path) => [path, 1])]);
}

/**
 * The exact arguments `find()` gives the driver: the canonical filter (with the keyset of a
 * cursor page's position), the sort as an
 * ordered list (`_id` when empty, like the embedded store), skip and limit (0 = no limit, as
 * in MongoDB), an inclusion projection that always keeps `_id`, and the time limit.
 */
export function toDriverFind(
  query: FindQuery,
  maxTimeMS: number,
): { filter: Filter<Document>; options: FindOptions } {
  const keys: Array<[string, SortDirection]> =
    query.sort.length > 0 ? query.sort.map(([p, d]) => [p, d]) : [['_id', 1]];
  const sort: Sort = keys;
  const options: FindOptions = { sort, skip: query.skip, limit: query.limit, maxTimeMS };
  if (query.projection) options.projection = toProjection(query.projection);
  // A cursor page: the rows after the position, as the canonical keyset condition.
  const filter = query.after
    ? { $and: [query.filter, positionFilter(query.after, query.sort)] }
    : query.filter;
  return { filter, options };
}

/** Documents a scan's cursor fetches per round trip: small enough to keep memory flat. */
export const SCAN_BATCH_SIZE = 500;

/**
 * `toDriverFind` for a streamed scan: fetched in batches of SCAN_BATCH_SIZE, and a sort too large
 * for memory may spill to disk (an export of a whole collection sorted on an unindexed field
 * would otherwise hit the server's in-memory sort limit).
 */
export function toDriverScan(query: FindQuery): { filter: Filter<Document>; options: FindOptions } {
  // No time limit: an export reads a whole collection at the client's pace; the cursor is bounded
  // by the plan's export maximum instead.
  const { filter, options } = toDriverFind(query, 0);
  return { filter, options: { ...options, batchSize: SCAN_BATCH_SIZE, allowDiskUse: true } };
}

export class MongoDocuments implements DocumentRepository {
  constructor(
    private readonly client: MongoClient,
    private readonly dbPrefix: string,
    private readonly collections: CollectionRegistry,
    private readonly clock: ClusterClock,
    private readonly limits: MongoLimits,
  ) {}

  #dbName(scope: DataScope): string {
    return projectDbName(this.dbPrefix, scope);
  }

  #documents(scope: DataScope, collection: string): Collection<StoredDocument> {
    assertCollectionName(collection);
    return this.client.db(this.#dbName(scope)).collection<StoredDocument>(collection);
  }

  /** The same collection, typed for the canonical filter (a MongoDB filter over any document). */
  #queryable(scope: DataScope, collection: string): Collection<Document> {
    assertCollectionName(collection);
    return this.client.db(this.#dbName(scope)).collection(collection);
  }

  #versions(scope: DataScope, collection: string): Collection<VersionRecord> {
    return this.client.db(this.#dbName(scope)).collection<VersionRecord>(versionsCollectionName(collection));
  }

  async get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null> {
    const stored = await this.#documents(scope, collection).findOne({ _id: id });
    return stored ? fromStored(stored) : null;
  }

  /** Per collection, the last commit made with `durable: false`, until it settles. */
  readonly #deferred = new Map<string, Promise<void>>();

  /**
   * Every commit is acknowledged by the majority with its journal, so `durable: false` changes
   * only the order: a commit waits for the collection's deferred commits made before it (the
   * port's promise; each is a transaction of its own, which could otherwise land in any order).
   */
  async commit(
    scope: DataScope,
    collection: string,
    writes: DocumentWrite[],
    options?: CommitOptions,
  ): Promise<CommitResult> {
    const key = `${this.#dbName(scope)}.${collection}`;
    const before = this.#deferred.get(key);
    const committed = before
      ? before.then(() => this.#commit(scope, collection, writes))
      : this.#commit(scope, collection, writes);
    if (options?.durable === false) {
      const settled = committed.then(
        () => {},
        () => {},
      );
      this.#deferred.set(key, settled);
      void settled.then(() => {
        if (this.#deferred.get(key) === settled) this.#deferred.delete(key);
      });
    }
    return committed;
  }

  async #commit(scope: DataScope, collection: string, writes: DocumentWrite[]): Promise<CommitResult> {
    assertContiguous(writes);
    const documents = this.#documents(scope, collection);
    if (writes.length === 0) return { ok: true };
    await this.collections.ensure(this.#dbName(scope), collection);
    // Collections made before the trash existed get its sidecars (and their TTL indexes) before
    // the first document moves in; new collections got them with `ensure`.
    if (writes.some((w) => w.kind === 'delete' && w.trash)) await this.#trashReady(scope, collection);
    const versions = this.#versions(scope, collection);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#commitOnce(documents, versions, writes);
      } catch (error) {
        // A document appeared or changed between our snapshot and our write without the server
        // reporting a write conflict (which withTransaction retries by itself). Start over: the
        // next attempt's snapshot sees the change and reports it as a conflict if it is one.
        const declared = conflictingIndexName(error);
        if (declared !== null) throw await this.#uniqueConflict(scope, collection, declared, error, writes);
        const raced = error instanceof ConcurrentChange || isDuplicateKeyError(error);
        if (!raced || attempt >= MAX_COMMIT_ATTEMPTS) throw error;
      }
    }
  }

  readonly #trashKnown = new Set<string>();

  async #trashReady(scope: DataScope, collection: string): Promise<void> {
    const key = `${this.#dbName(scope)}.${collection}`;
    if (this.#trashKnown.has(key)) return;
    await ensureTrashCollections(this.client.db(this.#dbName(scope)), collection);
    // Bounded like any per-collection memo: forgetting only costs an idempotent createIndexes.
    if (this.#trashKnown.size >= 10_000) this.#trashKnown.clear();
    this.#trashKnown.add(key);
  }

  /** Nothing is ever deferred here (see `commit`). */
  async sync(): Promise<void> {}

  /**
   * A declared unique index refused the commit: name it and the document holding the value,
   * found by the index's fields and the values the failed write carried (the bulk write error
   * does not carry the server's `keyValue`; see failedWriteDocument).
   */
  async #uniqueConflict(
    scope: DataScope,
    collection: string,
    index: string,
    error: unknown,
    writes: DocumentWrite[],
  ): Promise<UniqueIndexConflictError> {
    const written = failedWriteDocument(error);
    const target = this.#queryable(scope, collection);
    const info = written ? (await target.indexes()).find((i) => i.name === index) : undefined;
    const filter = written && info ? sameKeyFilter(Object.keys(info.key), written) : null;
    if (!filter) return new UniqueIndexConflictError(index, null);
    const own = writes.map((w) => (w.kind === 'put' ? w.document._id : w.id));
    const other = await target.findOne(
      { $and: [filter, { _id: { $nin: own } }] },
      { projection: { _id: 1 } },
    );
    return new UniqueIndexConflictError(index, other ? String(other._id) : null);
  }

  async #commitOnce(
    documents: Collection<StoredDocument>,
    versions: Collection<VersionRecord>,
    writes: DocumentWrite[],
  ): Promise<CommitResult> {
    // The callback may run several times (withTransaction retries transient errors, e.g. a
    // write conflict with a concurrent commit), so it builds everything afresh each time.
    const steps = trashSteps(writes);
    const db = this.client.db(documents.dbName);
    const { result, operationTime } = await inTransaction(
      this.client,
      this.limits,
      async (s): Promise<CommitResult> => {
        const current = await this.#currentVersions(documents, batchIds(writes), s);
        const conflicts = findConflicts(writes, (id) => current.get(id) ?? null);
        for (const c of await trashConflicts(db, documents.collectionName, steps, s))
          if (!conflicts.some((known) => known.id === c.id)) conflicts.push(c);
        if (conflicts.length > 0) {
          // Nothing was written; aborting by hand makes withTransaction return our result.
          await s.abortTransaction();
          return { ok: false, conflicts };
        }
        // Before the document writes: what moves to the trash is read in this snapshot.
        await applyTrashSteps(db, documents.collectionName, versions.collectionName, steps, s);
        const plan = planWrites(writes);
        const written = await documents.bulkWrite(plan.documentOps, { session: s, ordered: true });
        if (!matchesExpected(written, plan.expected)) throw new ConcurrentChange();
        if (plan.versionOps.length > 0)
          await versions.bulkWrite(plan.versionOps, { session: s, ordered: true });
        return { ok: true };
      },
    );
    // The commit's cluster time: a watch() from now on starts after this write (changes.ts).
    if (result.ok) this.clock.observe(operationTime);
    return result;
  }

  /** Current `$version` of each existing id, read inside the transaction's snapshot. */
  async #currentVersions(
    documents: Collection<StoredDocument>,
    ids: string[],
    session: ClientSession,
  ): Promise<Map<string, number>> {
    const rows = await documents
      .find({ _id: { $in: ids } }, { session, projection: { _id: 1, '_folio.version': 1 } })
      .toArray();
    const current = new Map<string, number>();
    for (const row of rows) {
      const version: unknown = row._folio?.version;
      if (typeof version !== 'number') {
        // Only something other than Folio can have written it; no condition can be decided.
        throw new Error(`document ${row._id} in ${documents.collectionName} has no _folio.version`);
      }
      current.set(row._id, version);
    }
    return current;
  }

  async find(scope: DataScope, collection: string, query: FindQuery): Promise<FolioDocument[]> {
    const { filter, options } = toDriverFind(query, this.limits.queryTimeoutMs);
    try {
      const rows = await this.#queryable(scope, collection).find(filter, options).toArray();
      return rows.map((row) => fromStored(row));
    } catch (error) {
      throw queryRejection(error) ?? error;
    }
  }

  async *scan(scope: DataScope, collection: string, query: FindQuery): AsyncGenerator<FolioDocument> {
    const { filter, options } = toDriverScan(query);
    const cursor = this.#queryable(scope, collection).find(filter, options);
    try {
      for await (const row of cursor) yield fromStored(row);
    } catch (error) {
      throw queryRejection(error) ?? error;
    } finally {
      await cursor.close();
    }
  }

  async count(scope: DataScope, collection: string, filter: StoredFilter, upTo?: number): Promise<number> {
    return this.#queryable(scope, collection).countDocuments(filter, {
      maxTimeMS: this.limits.queryTimeoutMs,
      ...(upTo === undefined ? {} : { limit: upTo }),
    });
  }

  async listCollections(scope: DataScope): Promise<CollectionInfo[]> {
    return listFolioCollections(this.client.db(this.#dbName(scope)));
  }

  async explain(scope: DataScope, collection: string, query: FindQuery): Promise<QueryPlan> {
    const { filter, options } = toDriverFind(query, this.limits.queryTimeoutMs);
    const explained = await this.#queryable(scope, collection)
      .find(filter, options)
      .explain('executionStats');
    return planOfExplain(explained);
  }

  async listVersions(scope: DataScope, collection: string, id: string): Promise<VersionInfo[]> {
    assertCollectionName(collection);
    const rows = await this.#versions(scope, collection)
      .find({ docId: id }, { sort: { version: -1 }, projection: { document: 0 } })
      .toArray();
    return rows.map((row) => ({
      version: row.version,
      operation: row.operation,
      timestamp: row.timestamp,
      apiKeyHint: row.apiKeyHint,
    }));
  }

  async getVersion(
    scope: DataScope,
    collection: string,
    id: string,
    version: number,
  ): Promise<FolioDocument | null> {
    assertCollectionName(collection);
    const row = await this.#versions(scope, collection).findOne({ docId: id, version });
    return row ? fromStored(row.document) : null;
  }
}
