/**
 * Snapshots of the MongoDB store (the port's SnapshotRepository). Written against the driver's
 * documented semantics; no MongoDB server runs in this repository's CI, so the MongoDB suites
 * exercise it wherever one does (docs/operations.md).
 *
 * Reading: one snapshot session (`startSession({snapshot: true})`, MongoDB 5.0+). Its first
 * read fixes a cluster time and every later find in the session reads at that time, across all
 * of Folio's databases, while writers go on. The server keeps that point readable for
 * `minSnapshotHistoryWindowInSeconds` (300 s by default): a snapshot read that takes longer
 * fails with SnapshotTooOld rather than mixing two points in time. Catalogue reads (the list of
 * collections and their declared indexes) are not snapshot reads: Folio never drops a
 * collection, and a collection created after the snapshot's time reads as empty in it.
 *
 * Writing: each record replaces the document of the same `_id` (upsert), so a batch written
 * twice is written once. Documents are written as plain inserts into their collection, outside
 * any transaction, so a Folio instance watching the deployment would see them as inserts: no
 * Folio may run on a store being restored (docs/operations.md).
 *
 * Trash: entries already expired when the read starts are left out with their history (erased
 * data to every reader; the TTL monitor only frees the bytes later). A trashed version is stored
 * with its entry's `expireAt` (the TTL index erases both together): the writer takes it from the
 * entry, which the snapshot puts before its versions, in the same batch or an earlier one.
 */
import type { AnyBulkWriteOperation, ClientSession, Db, Document, Filter, MongoClient } from 'mongodb';
import {
  type DataScope,
  DuplicateError,
  type IndexRecord,
  type ProjectRecord,
  SnapshotLostError,
  type SnapshotRecord,
  type SnapshotRepository,
  type VersionInfo,
} from '../../port.js';
import { fromStored, type StoredDocument, toStored } from '../../storedForm.js';
import { trashEntryOf } from '../../trashEntry.js';
import {
  type AccountDoc,
  fromAccountDoc,
  fromKeyDoc,
  fromProjectDoc,
  type KeyDoc,
  type ProjectDoc,
  toAccountDoc,
  toKeyDoc,
  toProjectDoc,
} from '../accounts/systemRecords.js';
import { type SchemaDoc, schemaRecordId, schemaRecordPlace } from '../documents/collectionSchemas.js';
import { type TrashDoc, type TrashVersionDoc, trashDocOf } from '../documents/trash.js';
import type { VersionRecord } from '../documents/writePlan.js';
import type { MongoIndexes } from '../indexes/declaredIndexes.js';
import { folioCollectionNames } from '../layout/collectionCatalog.js';
import type { CollectionRegistry } from '../layout/collections.js';
import {
  projectDbName,
  projectDbPattern,
  SYSTEM_COLLECTIONS,
  systemDbName,
  trashCollectionNames,
  versionsCollectionName,
} from '../layout/naming.js';
import { fromWebhookDoc, SEALING_KEY_SETTING, toWebhookDoc, type WebhookDoc } from '../webhooks/webhooks.js';

/** Documents a snapshot cursor fetches per round trip. */
const READ_BATCH_SIZE = 500;

/** A stored version (live or trashed history) as a snapshot's record. */
function versionRecord(
  type: 'version' | 'trashedVersion',
  scope: DataScope,
  collection: string,
  v: VersionRecord,
): SnapshotRecord {
  const { version, operation, timestamp, apiKeyHint } = v;
  const info: VersionInfo = { version, operation, timestamp, apiKeyHint };
  return { type, scope, collection, id: v.docId, version: info, document: fromStored(v.document) };
}

/** The system collections a snapshot reads and writes, in the order the port promises. */
const SYSTEM_TARGETS = ['settings', 'accounts', 'projects', 'keys', 'webhooks', 'collectionSchemas'] as const;
type SystemTarget = (typeof SYSTEM_TARGETS)[number];

/** One Folio collection's writes: its documents and its version sidecar. */
export interface CollectionWrites {
  dbName: string;
  collection: string;
  documents: AnyBulkWriteOperation<StoredDocument>[];
  versions: AnyBulkWriteOperation<VersionRecord>[];
  trashEntries: AnyBulkWriteOperation<TrashDoc>[];
  trashVersions: AnyBulkWriteOperation<TrashVersionDoc>[];
}

/** Where a trashed document's `expiresAt` is looked up: its database, collection and id. */
export function trashEntryKey(dbName: string, collection: string, id: string): string {
  return JSON.stringify([dbName, collection, id]);
}

/**
 * The trash entries a batch's trashed versions need the `expiresAt` of and does not hold itself
 * (their entry came in an earlier batch), by database and collection.
 */
export function trashEntriesToLookUp(
  dbPrefix: string,
  records: readonly SnapshotRecord[],
): Array<{ dbName: string; collection: string; ids: string[] }> {
  const inBatch = new Set<string>();
  const wanted = new Map<string, { dbName: string; collection: string; ids: Set<string> }>();
  for (const record of records) {
    if (record.type !== 'trashedDocument' && record.type !== 'trashedVersion') continue;
    const dbName = projectDbName(dbPrefix, record.scope);
    const id = record.type === 'trashedDocument' ? record.entry.id : record.id;
    const key = trashEntryKey(dbName, record.collection, id);
    if (record.type === 'trashedDocument') inBatch.add(key);
    else if (!inBatch.has(key)) {
      const at = `${dbName}.${record.collection}`;
      let group = wanted.get(at);
      if (!group) {
        group = { dbName, collection: record.collection, ids: new Set() };
        wanted.set(at, group);
      }
      group.ids.add(id);
    }
  }
  return [...wanted.values()].map((g) => ({ ...g, ids: [...g.ids] }));
}

export interface SnapshotWritePlan {
  system: Record<SystemTarget, AnyBulkWriteOperation<Document>[]>;
  /** Keyed by `db.collection`, in first-seen order. */
  collections: Map<string, CollectionWrites>;
  /** Declarations to build once the documents are in. */
  indexes: Array<Extract<SnapshotRecord, { type: 'index' }>>;
}

type SystemRecord = Extract<
  SnapshotRecord,
  { type: 'setting' | 'account' | 'project' | 'key' | 'webhook' | 'schema' }
>;
type CollectionRecord = Extract<
  SnapshotRecord,
  { type: 'document' | 'version' | 'trashedDocument' | 'trashedVersion' }
>;

function replaceById<T extends Document>(doc: T): AnyBulkWriteOperation<T> {
  return { replaceOne: { filter: { _id: doc._id }, replacement: doc, upsert: true } };
}

/** A version keyed by its document and number (`_id` is the server's). */
function replaceVersion<T extends VersionRecord>(version: T): AnyBulkWriteOperation<T> {
  return {
    replaceOne: {
      // The driver cannot check a filter against a generic document type.
      filter: { docId: version.docId, version: version.version } as Filter<T>,
      replacement: version,
      upsert: true,
    },
  };
}

/**
 * The driver operations that write a batch of snapshot records: every one an upsert keyed by
 * the record's identity (the `_id`, or a version's document and number), so writing the same
 * batch again changes nothing.
 */
export function planSnapshotWrites(
  dbPrefix: string,
  records: readonly SnapshotRecord[],
  /** `expiresAt` of trash entries written by earlier batches, by `trashEntryKey`. */
  earlierTrashExpiry: ReadonlyMap<string, string> = new Map(),
): SnapshotWritePlan {
  const plan: SnapshotWritePlan = {
    system: { settings: [], accounts: [], projects: [], keys: [], webhooks: [], collectionSchemas: [] },
    collections: new Map(),
    indexes: [],
  };
  const trashExpiry = new Map(earlierTrashExpiry);
  for (const record of records) {
    switch (record.type) {
      case 'index':
        plan.indexes.push(record);
        break;
      case 'document':
      case 'version':
      case 'trashedDocument':
      case 'trashedVersion':
        planCollectionWrite(collectionWrites(plan, dbPrefix, record), record, trashExpiry);
        break;
      default: {
        const [target, doc] = systemWrite(record);
        plan.system[target].push(replaceById(doc));
      }
    }
  }
  return plan;
}

/** The writes of the record's collection, created in first-seen order. */
function collectionWrites(
  plan: SnapshotWritePlan,
  dbPrefix: string,
  record: CollectionRecord,
): CollectionWrites {
  const dbName = projectDbName(dbPrefix, record.scope);
  const key = `${dbName}.${record.collection}`;
  let writes = plan.collections.get(key);
  if (!writes) {
    writes = {
      dbName,
      collection: record.collection,
      documents: [],
      versions: [],
      trashEntries: [],
      trashVersions: [],
    };
    plan.collections.set(key, writes);
  }
  return writes;
}

/** Where a system record goes and its document there. */
function systemWrite(record: SystemRecord): [SystemTarget, Document] {
  switch (record.type) {
    case 'setting':
      return ['settings', { _id: SEALING_KEY_SETTING, value: record.value }];
    case 'account':
      return ['accounts', toAccountDoc(record.account)];
    case 'project':
      return ['projects', toProjectDoc(record.project)];
    case 'key':
      return ['keys', toKeyDoc(record.key)];
    case 'webhook':
      return ['webhooks', toWebhookDoc(record.webhook)];
    case 'schema': {
      const { schema, mode, revision, updatedAt } = record.schema;
      return [
        'collectionSchemas',
        { _id: schemaRecordId(record.scope, record.collection), schema, mode, revision, updatedAt },
      ];
    }
  }
}

/**
 * A document, a version or a trash record into its collection's writes. `trashExpiry` learns
 * each trashed document's `expiresAt`, which its versions (after it) are stored with.
 */
function planCollectionWrite(
  writes: CollectionWrites,
  record: CollectionRecord,
  trashExpiry: Map<string, string>,
): void {
  switch (record.type) {
    case 'document':
      writes.documents.push(replaceById(toStored(record.document)));
      return;
    case 'version':
      writes.versions.push(replaceVersion(versionRecordOf(record)));
      return;
    case 'trashedDocument': {
      const { entry } = record;
      writes.trashEntries.push(replaceById(trashDocOf(toStored(entry.document), entry)));
      trashExpiry.set(trashEntryKey(writes.dbName, record.collection, entry.id), entry.expiresAt);
      return;
    }
    case 'trashedVersion': {
      const expiresAt = trashExpiry.get(trashEntryKey(writes.dbName, record.collection, record.id));
      if (expiresAt === undefined) {
        throw new Error(
          `a trashed version of ${record.collection}/${record.id} comes without its trashed document`,
        );
      }
      writes.trashVersions.push(
        replaceVersion({ ...versionRecordOf(record), expireAt: new Date(expiresAt) }),
      );
      return;
    }
  }
}

function versionRecordOf(
  record: Extract<SnapshotRecord, { type: 'version' | 'trashedVersion' }>,
): VersionRecord {
  const { version, operation, timestamp, apiKeyHint } = record.version;
  return { docId: record.id, version, operation, timestamp, apiKeyHint, document: toStored(record.document) };
}

/** MongoDB's error codes for a snapshot read that lost its point in time. */
const SNAPSHOT_TOO_OLD = 239;
const SNAPSHOT_UNAVAILABLE = 246;

/**
 * The port's SnapshotLostError for a snapshot read's failure, or null for any other error.
 * SnapshotUnavailable: the catalogue of a collection changed after the snapshot's time (created,
 * or an index built), so it cannot be read at that time: a new snapshot reads it. SnapshotTooOld:
 * the read outlasted the server's snapshot history.
 */
export function snapshotLost(error: unknown): SnapshotLostError | null {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === SNAPSHOT_UNAVAILABLE) {
    return new SnapshotLostError(
      'a collection or index was created while the snapshot was read, so it cannot be read at the snapshot time',
      true,
      { cause: error },
    );
  }
  if (code === SNAPSHOT_TOO_OLD) {
    return new SnapshotLostError(
      'the snapshot read took longer than the server keeps history for it (minSnapshotHistoryWindowInSeconds, ' +
        '300 s by default): raise it for the backup, or back up from a hidden secondary (docs/operations.md)',
      false,
      { cause: error },
    );
  }
  return null;
}

/**
 * What to say about a restored index that could not be built (MongoDB keeps no failed index, so
 * unsaid it would be gone without a trace), or null when it was built.
 */
export function unbuiltIndexWarning(
  scope: DataScope,
  collection: string,
  built: IndexRecord | null,
  name: string,
): string | null {
  if (built?.state === 'ready') return null;
  const where = `${scope.projectId}/${scope.env}/${collection}`;
  const why = built?.failure?.message ?? 'the collection is at its index limit';
  const ids = built?.failure?.ids.length ? ` (documents ${built.failure.ids.join(', ')})` : '';
  return `Restore: index ${name} of ${where} was not built: ${why}${ids}. Declare it again once that is resolved.`;
}

export class MongoSnapshots implements SnapshotRepository {
  readonly #system: Db;

  constructor(
    private readonly client: MongoClient,
    private readonly dbPrefix: string,
    private readonly collections: CollectionRegistry,
    private readonly indexes: MongoIndexes,
    private readonly warn: (message: string) => void,
  ) {
    this.#system = client.db(systemDbName(dbPrefix));
  }

  async *read(): AsyncGenerator<SnapshotRecord> {
    try {
      yield* this.#read();
    } catch (error) {
      throw snapshotLost(error) ?? error;
    }
  }

  async *#read(): AsyncGenerator<SnapshotRecord> {
    const session = this.client.startSession({ snapshot: true });
    // Trash entries expired by now are left out (see the header).
    const now = new Date().toISOString();
    try {
      const find = <T extends Document>(db: Db, name: string, sort: Document) =>
        db.collection<T>(name).find({}, { session, sort, batchSize: READ_BATCH_SIZE });
      // The first read fixes the snapshot's time.
      const settings = await this.#system
        .collection<{ _id: string; value: string }>(SYSTEM_COLLECTIONS.settings)
        .find({ _id: SEALING_KEY_SETTING }, { session })
        .toArray();
      for (const s of settings) yield { type: 'setting', name: 'webhookSealingKey', value: s.value };
      for await (const d of find<AccountDoc>(this.#system, SYSTEM_COLLECTIONS.accounts, { _id: 1 })) {
        yield { type: 'account', account: fromAccountDoc(d) };
      }
      // Projects name the databases to read; a deployment has few enough to hold them.
      const projects: ProjectRecord[] = [];
      for await (const d of find<ProjectDoc>(this.#system, SYSTEM_COLLECTIONS.projects, { _id: 1 })) {
        const project = fromProjectDoc(d);
        projects.push(project);
        yield { type: 'project', project };
      }
      for await (const d of find<KeyDoc>(this.#system, SYSTEM_COLLECTIONS.keys, { _id: 1 })) {
        yield { type: 'key', key: fromKeyDoc(d) };
      }
      for await (const d of find<WebhookDoc>(this.#system, SYSTEM_COLLECTIONS.webhooks, { _id: 1 })) {
        yield { type: 'webhook', webhook: fromWebhookDoc(d) };
      }
      for await (const d of find<SchemaDoc>(this.#system, SYSTEM_COLLECTIONS.collectionSchemas, { _id: 1 })) {
        const { scope, collection } = schemaRecordPlace(d._id);
        const { schema, mode, revision, updatedAt } = d;
        yield { type: 'schema', scope, collection, schema: { schema, mode, revision, updatedAt } };
      }
      for (const project of projects) {
        for (const env of ['live', 'test'] as const) {
          const scope = { projectId: project.id, env };
          yield* this.#readScope(scope, session, now);
        }
      }
    } finally {
      await session.endSession();
    }
  }

  async *#readScope(scope: { projectId: string; env: 'live' | 'test' }, session: ClientSession, now: string) {
    const db = this.client.db(projectDbName(this.dbPrefix, scope));
    const listed = await db.listCollections({}, { nameOnly: true, authorizedCollections: true }).toArray();
    for (const collection of folioCollectionNames(listed)) {
      const documents = db
        .collection<StoredDocument>(collection)
        .find({}, { session, sort: { _id: 1 }, batchSize: READ_BATCH_SIZE });
      for await (const stored of documents) {
        yield { type: 'document', scope, collection, document: fromStored(stored) } satisfies SnapshotRecord;
      }
      const versions = db
        .collection<VersionRecord>(versionsCollectionName(collection))
        .find({}, { session, sort: { docId: 1, version: 1 }, batchSize: READ_BATCH_SIZE });
      for await (const v of versions) yield versionRecord('version', scope, collection, v);
      // Every live entry of the collection, then their histories (each after its entry).
      const trash = trashCollectionNames(collection);
      const live = new Set<string>();
      const entries = db
        .collection<TrashDoc>(trash.entries)
        .find({ expiresAt: { $gt: now } }, { session, sort: { _id: 1 }, batchSize: READ_BATCH_SIZE });
      for await (const e of entries) {
        live.add(e._id);
        const entry = trashEntryOf(e._id, e, fromStored(e.document));
        yield { type: 'trashedDocument', scope, collection, entry } satisfies SnapshotRecord;
      }
      if (live.size > 0) {
        const trashed = db
          .collection<TrashVersionDoc>(trash.versions)
          .find({}, { session, sort: { docId: 1, version: 1 }, batchSize: READ_BATCH_SIZE });
        for await (const v of trashed) {
          if (live.has(v.docId)) yield versionRecord('trashedVersion', scope, collection, v);
        }
      }
      for (const index of await this.indexes.list(scope, collection)) {
        yield { type: 'index', scope, collection, index } satisfies SnapshotRecord;
      }
    }
  }

  async isEmpty(): Promise<boolean> {
    for (const name of ['accounts', 'projects', 'keys', 'webhooks', 'collectionSchemas'] as const) {
      const one = await this.#system
        .collection(SYSTEM_COLLECTIONS[name])
        .findOne({}, { projection: { _id: 1 } });
      if (one) return false;
    }
    const { databases } = await this.client
      .db('admin')
      .admin()
      .listDatabases({
        nameOnly: true,
        filter: { name: { $regex: projectDbPattern(this.dbPrefix) } },
      });
    for (const { name } of databases) {
      const db = this.client.db(name);
      for (const { name: collection } of await db.listCollections({}, { nameOnly: true }).toArray()) {
        if (await db.collection(collection).findOne({}, { projection: { _id: 1 } })) return false;
      }
    }
    return true;
  }

  async write(records: readonly SnapshotRecord[]): Promise<void> {
    const earlier = new Map<string, string>();
    for (const { dbName, collection, ids } of trashEntriesToLookUp(this.dbPrefix, records)) {
      const found = await this.client
        .db(dbName)
        .collection<TrashDoc>(trashCollectionNames(collection).entries)
        .find({ _id: { $in: ids } }, { projection: { _id: 1, expiresAt: 1 } })
        .toArray();
      for (const e of found) earlier.set(trashEntryKey(dbName, collection, e._id), e.expiresAt);
    }
    const plan = planSnapshotWrites(this.dbPrefix, records, earlier);
    for (const name of SYSTEM_TARGETS) {
      const ops = plan.system[name];
      if (ops.length > 0)
        await this.#system.collection(SYSTEM_COLLECTIONS[name]).bulkWrite(ops, { ordered: false });
    }
    for (const writes of plan.collections.values()) {
      // Created as a Folio collection (pre- and post-images, metadata indexes, sidecar index).
      await this.collections.ensure(writes.dbName, writes.collection);
      const db = this.client.db(writes.dbName);
      if (writes.documents.length > 0) {
        await db
          .collection<StoredDocument>(writes.collection)
          .bulkWrite(writes.documents, { ordered: false });
      }
      if (writes.versions.length > 0) {
        await db
          .collection<VersionRecord>(versionsCollectionName(writes.collection))
          .bulkWrite(writes.versions, { ordered: false });
      }
      const trash = trashCollectionNames(writes.collection);
      if (writes.trashEntries.length > 0)
        await db.collection<TrashDoc>(trash.entries).bulkWrite(writes.trashEntries, { ordered: false });
      if (writes.trashVersions.length > 0) {
        await db
          .collection<TrashVersionDoc>(trash.versions)
          .bulkWrite(writes.trashVersions, { ordered: false });
      }
    }
    for (const { scope, collection, index } of plan.indexes)
      await this.#restoreIndex(scope, collection, index);
  }

  /** Build the declaration; one already built (a resumed restore) stays; one that fails is said. */
  async #restoreIndex(scope: DataScope, collection: string, index: IndexRecord) {
    let built: IndexRecord | null;
    try {
      built = await this.indexes.create(
        scope,
        collection,
        { name: index.name, fields: index.fields, unique: index.unique },
        Number.MAX_SAFE_INTEGER,
      );
    } catch (error) {
      if (!(error instanceof DuplicateError)) throw error;
      return;
    }
    const warning = unbuiltIndexWarning(scope, collection, built, index.name);
    if (warning) this.warn(warning);
  }
}
