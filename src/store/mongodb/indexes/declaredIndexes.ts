/**
 * Indexes declared on a collection, on MongoDB: `createIndex` on the stored paths with the
 * declared name, direction and uniqueness. MongoDB keeps the catalogue itself (`listIndexes`),
 * builds without blocking writers for long, and makes array fields multikey. Every decision is
 * a pure function below (unit-tested); the class only calls the driver.
 *
 * Differences from the embedded store (docs/querying.md): MongoDB keeps no record of a failed
 * build, so a failed index is reported by `create` and not listed afterwards. Unique indexes
 * skip documents without the field (a partial index on `$exists: true`) and constrain `null`,
 * as the embedded store does; arrays are multikey there (each element unique).
 */
import {
  type Collection,
  type CreateIndexesOptions,
  type Db,
  type Document,
  type IndexDescriptionInfo,
  type IndexSpecification,
  type MongoClient,
  MongoServerError,
} from 'mongodb';
import {
  type DataScope,
  DuplicateError,
  type IndexDefinition,
  type IndexRecord,
  type IndexRepository,
  type IndexUsage,
  type IndexUsageTotal,
  type QueryPlan,
  type SortDirection,
} from '../../port.js';
import { type GuardDoc, guardId, insertWhileBelow } from '../database/guards.js';
import { DUPLICATE_KEY, MAX_TIME_MS_EXPIRED } from '../database/serverErrors.js';
import { inTransaction, type WriteLimits } from '../database/transactions.js';
import type { CollectionRegistry } from '../layout/collections.js';
import { DOCUMENT_INDEXES, INDEX_BUILD_OPTIONS, INDEX_BUILD_TIMEOUT_MS } from '../layout/indexes.js';
import {
  assertCollectionName,
  isSidecarCollection,
  projectDbName,
  SYSTEM_COLLECTIONS,
} from '../layout/naming.js';
import { MongoIndexUsage } from './indexUsage.js';

/** The name of MongoDB's own index on `_id`, never a declared one. */
const ID_INDEX = '_id_';
/** Ids of duplicates a failed unique build reports. */
const MAX_REPORTED_IDS = 20;
/** MongoDB's code for an index name that is taken with other options. */
const INDEX_OPTIONS_CONFLICT = 85;
const INDEX_KEY_SPECS_CONFLICT = 86;

/**
 * `createIndex` arguments for a declaration. A list sorts by `[…fields, ['_id', d]]` (the
 * tie-breaker takes the last key's direction), so a non-unique index ends with `_id` in the last
 * field's direction: then it returns a sorted page, and a cursor page from its position, without
 * a blocking sort (`indexServesSort`). A unique index keeps its own key: `_id` would make every
 * key unique.
 */
export function toMongoIndex(index: IndexDefinition): {
  key: IndexSpecification;
  options: CreateIndexesOptions;
} {
  const key: Array<[string, SortDirection]> = index.fields.map((f) => [f.path, f.order]);
  if (!index.unique) key.push(['_id', index.fields.at(-1)!.order]);
  const options: CreateIndexesOptions = { name: index.name };
  if (index.unique) {
    options.unique = true;
    // Documents without the field stay unconstrained, as on the embedded store.
    options.partialFilterExpression = Object.fromEntries(
      index.fields.map((f) => [f.path, { $exists: true }]),
    ) as Document;
  }
  return { key, options };
}

/** Indexes that are not declarations: MongoDB's `_id` and Folio's own (indexes.ts). */
const OWN_INDEXES = new Set([ID_INDEX, ...DOCUMENT_INDEXES.map((i) => i.name)]);

/** A `listIndexes` entry as a declaration (null for MongoDB's `_id` index and Folio's own). */
export function fromMongoIndex(info: IndexDescriptionInfo): IndexRecord | null {
  if (typeof info.name !== 'string' || OWN_INDEXES.has(info.name)) return null;
  const fields = Object.entries(info.key as Record<string, unknown>)
    .filter((entry): entry is [string, SortDirection] => entry[1] === 1 || entry[1] === -1)
    .map(([path, order]) => ({ path, order }));
  // The `_id` toMongoIndex appends (declarations never name `_id`).
  if (fields.length > 1 && fields.at(-1)!.path === '_id') fields.pop();
  return {
    name: info.name,
    fields,
    unique: info.unique === true,
    // listIndexes shows an index once its build finished.
    state: 'ready',
    createdAt: '',
  };
}

/**
 * Reservations: `listIndexes` shows an index only once its build finished, so a create first
 * records the name it is building in the settings collection (`value`: when the reservation
 * lapses, should the instance die before removing it), in the same transaction that counts the
 * collection's indexes under its guard document (guards.ts). A racing create then counts the
 * build in progress too. Ids are the collection's prefix plus the index name. A build that
 * outlasts the reservation (a very large collection) is counted again once it is listed.
 */
export const RESERVATION_TTL_MS = 15 * 60_000;

function reservationPrefix(scope: DataScope, collection: string): string {
  return `${['indexReservation', scope.projectId, scope.env, collection].join('\u0000')}\u0000`;
}

export function reservationId(scope: DataScope, collection: string, name: string): string {
  return reservationPrefix(scope, collection) + name;
}

/** The `_id` range holding exactly the collection's reservations (ids are its prefix plus a name). */
export function reservationRange(scope: DataScope, collection: string): { $gte: string; $lt: string } {
  const prefix = reservationPrefix(scope, collection);
  // The prefix ends with NUL: the same text ending with \u0001 sorts after every id it starts.
  return { $gte: prefix, $lt: `${prefix.slice(0, -1)}\u0001` };
}

/**
 * The index names a collection counts against its maximum: those in MongoDB's catalogue, and
 * those reserved by a build still running (a lapsed reservation is an instance that died).
 */
export function countedIndexNames(
  scope: DataScope,
  collection: string,
  catalogue: readonly string[],
  reservations: readonly GuardDoc[],
  nowIso: string,
): Set<string> {
  const names = new Set(catalogue);
  const prefix = reservationPrefix(scope, collection);
  for (const reservation of reservations) {
    if (!reservation._id.startsWith(prefix) || reservation.value <= nowIso) continue;
    names.add(reservation._id.slice(prefix.length));
  }
  return names;
}

/** MongoDB's code for a build aborted while it ran (a drop, a step-down, killOp). */
const INDEX_BUILD_ABORTED = 276;

/**
 * Why a build could not finish, or null when `error` is not about that: past its time limit
 * (INDEX_BUILD_OPTIONS; the server aborted it) or aborted on the server.
 */
export function unfinishedBuild(error: unknown): IndexRecord['failure'] | null {
  if (!(error instanceof MongoServerError)) return null;
  if (error.code === MAX_TIME_MS_EXPIRED) {
    const minutes = INDEX_BUILD_TIMEOUT_MS / 60_000;
    return {
      message:
        `the build did not finish within ${minutes} minutes and was abandoned: a majority of the ` +
        'replica set must build it (are members down or lagging?); declare it again later',
      ids: [],
    };
  }
  if (error.code === INDEX_BUILD_ABORTED) {
    return { message: `the build was aborted on the server (${error.message}); declare it again`, ids: [] };
  }
  return null;
}

/** Whether a collection's declared indexes, just after a build, are more than its maximum. */
export function overIndexLimit(names: readonly string[], maxIndexes: number): boolean {
  return new Set(names).size > maxIndexes;
}

/**
 * The declared index a duplicate-key error is about (null: not one, `_id`, or an index of a
 * sidecar collection such as the version records' `docId_version_unique`, which only a racing
 * commit can hit). The server names both: `collection: <db>.<collection> index: <name>`.
 */
export function conflictingIndexName(error: unknown): string | null {
  if (!(error instanceof MongoServerError) || error.code !== DUPLICATE_KEY) return null;
  const match = /collection: (\S+) index: (\S+)/.exec(error.message);
  if (!match) return null;
  const [, namespace = '', name = ''] = match;
  // Database names never hold a dot; a collection name may (the sidecars').
  const collection = namespace.slice(namespace.indexOf('.') + 1);
  return isSidecarCollection(collection) || OWN_INDEXES.has(name) ? null : name;
}

/**
 * The document a failed write of a bulk write was writing. A MongoBulkWriteError's write errors
 * keep only `index/code/errmsg/errInfo/op` (not the server's `keyValue`); `op` is the batch
 * entry: the document itself for an insert, `{q, u}` for a replacement.
 */
export function failedWriteDocument(error: unknown): Document | null {
  const writeErrors: unknown = (error as { writeErrors?: unknown }).writeErrors;
  const first: unknown = Array.isArray(writeErrors) ? writeErrors[0] : undefined;
  if (typeof first !== 'object' || first === null) return null;
  const withOp = first as { getOperation?: () => unknown; err?: { op?: unknown }; op?: unknown };
  const op: unknown =
    typeof withOp.getOperation === 'function' ? withOp.getOperation() : (withOp.err?.op ?? withOp.op);
  if (typeof op !== 'object' || op === null) return null;
  const replacement: unknown = (op as { u?: unknown }).u;
  if (typeof replacement === 'object' && replacement !== null && !Array.isArray(replacement)) {
    return replacement as Document;
  }
  return '_id' in op ? (op as Document) : null;
}

/**
 * The keys a document gives an index field (a dotted path): the value there, or, through arrays
 * (MongoDB's multikey indexes), each element's; none when the document lacks the field.
 */
export function indexKeysAt(document: unknown, path: string): unknown[] {
  let values: unknown[] = [document];
  for (const part of path.split('.')) {
    const next: unknown[] = [];
    for (const value of values) {
      for (const holder of Array.isArray(value) ? value : [value]) {
        if (typeof holder === 'object' && holder !== null && Object.hasOwn(holder, part)) {
          next.push((holder as Record<string, unknown>)[part]);
        }
      }
    }
    values = next;
  }
  // A non-empty array's elements are its keys; an empty one is one key of its own.
  return values.flatMap((value) => (Array.isArray(value) && value.length > 0 ? value : [value]));
}

/**
 * The filter matching the documents that hold one of `document`'s keys for each of a unique
 * index's fields (dotted paths), or null when the document lacks one (then the index does not
 * constrain it). A multikey field (an array) matches on any of its elements, as the index does.
 */
export function sameKeyFilter(fields: readonly string[], document: Document): Document | null {
  const entries: Array<[string, unknown]> = [];
  for (const path of fields) {
    const keys = indexKeysAt(document, path);
    if (keys.length === 0) return null;
    // Equality on a path matches a document holding that value anywhere along it, as a key.
    entries.push([path, keys.length === 1 ? keys[0] : { $in: keys }]);
  }
  return entries.length > 0 ? Object.fromEntries(entries) : null;
}

/** The aggregation listing documents that share values of `fields` (a failed unique build). */
export function duplicatesPipeline(fields: IndexDefinition['fields']): Document[] {
  const group = Object.fromEntries(fields.map((f, i) => [`k${i}`, `$${f.path}`]));
  const present = Object.fromEntries(fields.map((f) => [f.path, { $exists: true }]));
  return [
    { $match: present },
    { $group: { _id: group, ids: { $push: '$_id' }, n: { $sum: 1 } } },
    { $match: { n: { $gt: 1 } } },
    { $unwind: '$ids' },
    { $sort: { ids: 1 } },
    { $limit: MAX_REPORTED_IDS },
  ];
}

export class MongoIndexes implements IndexRepository {
  readonly #settings: Collection<GuardDoc>;
  readonly #usage: MongoIndexUsage;

  constructor(
    private readonly client: MongoClient,
    private readonly dbPrefix: string,
    private readonly collections: CollectionRegistry,
    system: Db,
    private readonly limits: WriteLimits,
  ) {
    this.#settings = system.collection<GuardDoc>(SYSTEM_COLLECTIONS.settings);
    this.#usage = new MongoIndexUsage(system);
  }

  /** Automatic-index usage, shared by every instance (indexUsage.ts). */
  recordUsage(entries: readonly IndexUsage[], windowMs: number): Promise<IndexUsageTotal[]> {
    return this.#usage.record(entries, windowMs);
  }

  #collection(scope: DataScope, collection: string) {
    assertCollectionName(collection);
    return this.client.db(projectDbName(this.dbPrefix, scope)).collection(collection);
  }

  async list(scope: DataScope, collection: string): Promise<IndexRecord[]> {
    try {
      const infos = await this.#collection(scope, collection).listIndexes().toArray();
      return infos.map(fromMongoIndex).filter((i): i is IndexRecord => i !== null);
    } catch (error) {
      // A collection that does not exist yet has no indexes.
      if (error instanceof MongoServerError && error.codeName === 'NamespaceNotFound') return [];
      throw error;
    }
  }

  async create(
    scope: DataScope,
    collection: string,
    index: IndexDefinition,
    maxIndexes: number,
  ): Promise<IndexRecord | null> {
    const reservation = reservationId(scope, collection, index.name);
    const { result: reserved } = await inTransaction(this.client, this.limits, (session) =>
      insertWhileBelow(
        session,
        {
          settings: this.#settings,
          id: guardId({ kind: 'indexes', scope, collection }),
          writer: reservation,
        },
        maxIndexes,
        async () => {
          const nowIso = new Date().toISOString();
          const counted = countedIndexNames(
            scope,
            collection,
            // The catalogue is not part of the transaction; builds in progress are, by reservation.
            (await this.list(scope, collection)).map((i) => i.name),
            await this.#settings.find({ _id: reservationRange(scope, collection) }, { session }).toArray(),
            nowIso,
          );
          if (counted.has(index.name)) throw new DuplicateError('name');
          return counted.size;
        },
        () =>
          this.#settings.updateOne(
            { _id: reservation },
            { $set: { value: new Date(Date.now() + RESERVATION_TTL_MS).toISOString() } },
            { upsert: true, session },
          ),
      ),
    );
    if (!reserved) return null;
    try {
      const built = await this.#build(scope, collection, index);
      if (built.state !== 'ready') return built;
      // Re-check once built: a reservation that lapsed during a long build, or a create on an
      // instance whose clock is off, may have let another index in meanwhile.
      const names = (await this.list(scope, collection)).map((i) => i.name);
      if (!overIndexLimit(names, maxIndexes)) return built;
      await this.#collection(scope, collection)
        .dropIndex(index.name)
        .catch(() => {});
      return null;
    } finally {
      // Built (now in the catalogue) or failed: either way the reservation has served.
      await this.#settings.deleteOne({ _id: reservation }).catch(() => {});
    }
  }

  async #build(scope: DataScope, collection: string, index: IndexDefinition): Promise<IndexRecord> {
    const createdAt = new Date().toISOString();
    const { key, options } = toMongoIndex(index);
    const target = this.#collection(scope, collection);
    // Created as a Folio collection (pre- and post-images), not implicitly by createIndex.
    await this.collections.ensure(projectDbName(this.dbPrefix, scope), collection);
    try {
      await target.createIndex(key, { ...options, ...INDEX_BUILD_OPTIONS });
      return { ...index, state: 'ready', createdAt };
    } catch (error) {
      const unfinished = unfinishedBuild(error);
      if (unfinished) {
        // The server aborts a build whose command it interrupts; this makes sure of it.
        await target.dropIndex(index.name).catch(() => {});
        return { ...index, state: 'failed', createdAt, failure: unfinished };
      }
      if (
        error instanceof MongoServerError &&
        (error.code === INDEX_OPTIONS_CONFLICT || error.code === INDEX_KEY_SPECS_CONFLICT)
      ) {
        throw new DuplicateError('name');
      }
      if (!(error instanceof MongoServerError) || error.code !== DUPLICATE_KEY) throw error;
      const rows = await target.aggregate<{ ids: unknown }>(duplicatesPipeline(index.fields)).toArray();
      return {
        ...index,
        state: 'failed',
        createdAt,
        failure: {
          message: 'documents share a value of the unique index',
          ids: rows.map((r) => String(r.ids)),
        },
      };
    }
  }

  async drop(scope: DataScope, collection: string, name: string): Promise<boolean> {
    if (!(await this.list(scope, collection)).some((i) => i.name === name)) return false;
    await this.#collection(scope, collection).dropIndex(name);
    return true;
  }
}

/** Plan stages deeper than this are not read (plans are a handful of stages deep). */
const MAX_PLAN_DEPTH = 32;

/**
 * `find().explain('executionStats')` as the port's QueryPlan: the winning plan's stages (under
 * `queryPlan` when the slot-based engine ran it), the index of its IXSCAN if that is a declared
 * one (not `_id_`), a COLLSCAN as a scan, and the execution counts.
 */
export function planOfExplain(explained: Document): QueryPlan {
  const planner = (explained.queryPlanner ?? {}) as Document;
  const winning = (planner.winningPlan ?? {}) as Document;
  const root = (winning.queryPlan ?? winning) as Document;
  const stages: Document[] = [];
  const pending: Array<[Document, number]> = [[root, 0]];
  while (pending.length > 0) {
    const [stage, depth] = pending.pop()!;
    if (typeof stage !== 'object' || stage === null || depth > MAX_PLAN_DEPTH) continue;
    stages.push(stage);
    if (stage.inputStage) pending.push([stage.inputStage as Document, depth + 1]);
    if (Array.isArray(stage.inputStages))
      for (const s of stage.inputStages) pending.push([s as Document, depth + 1]);
  }
  const ixscan = stages.find((s) => s.stage === 'IXSCAN' && typeof s.indexName === 'string');
  const indexName = ixscan ? (ixscan.indexName as string) : null;
  const stats = (explained.executionStats ?? {}) as Document;
  return {
    index: indexName === null || indexName === ID_INDEX ? null : indexName,
    scan: stages.some((s) => s.stage === 'COLLSCAN') || !ixscan,
    documentsExamined: typeof stats.totalDocsExamined === 'number' ? stats.totalDocsExamined : 0,
    returned: typeof stats.nReturned === 'number' ? stats.nReturned : 0,
    detail: stages.map((s) =>
      typeof s.indexName === 'string' ? `${String(s.stage)} ${s.indexName}` : String(s.stage),
    ),
  };
}
