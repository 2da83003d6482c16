/**
 * The trash on MongoDB: beside each Folio collection, `_folio.trash.<collection>` holds each
 * deleted document's last version and `_folio.trashVersions.<collection>` its history (apart from
 * the version sidecar, because the id may be taken again meanwhile). Moves in and out run inside
 * the document commit's transaction (documents.ts); what they do is decided by `trashSteps`, a
 * pure function.
 *
 * Expiry: every read filters on `expiresAt` (ISO text, compared as text like everywhere in
 * Folio), so an entry is gone to readers at its second; the bytes go with a TTL index on
 * `expireAt` (a Date), which MongoDB's TTL monitor applies within about a minute. `purgeExpired`
 * has nothing left to do here.
 */
import type { ClientSession, Db, IndexDescription, MongoClient } from 'mongodb';
import type {
  DataScope,
  DocumentWrite,
  TrashEntry,
  TrashPosition,
  TrashRepository,
  TrashStamp,
  VersionInfo,
  WriteConflict,
} from '../../port.js';
import { fromStored, type StoredDocument } from '../../storedForm.js';
import { trashEntryOf } from '../../trashEntry.js';
import { ensureIndexes } from '../layout/indexes.js';
import { projectDbName, trashCollectionNames } from '../layout/naming.js';
import type { VersionRecord } from './writePlan.js';

/** A trash entry as stored. */
export interface TrashDoc extends TrashStamp {
  _id: string;
  version: number;
  /** `expiresAt` as a Date, for the TTL index. */
  expireAt: Date;
  document: StoredDocument;
}

export type TrashVersionDoc = VersionRecord & { expireAt: Date };

export const TRASH_INDEXES: readonly IndexDescription[] = [
  { key: { deletedAt: -1, _id: -1 }, name: 'newest' },
  { key: { expireAt: 1 }, name: 'expiry_ttl', expireAfterSeconds: 0 },
];

export const TRASH_VERSIONS_INDEXES: readonly IndexDescription[] = [
  { key: { docId: 1, version: 1 }, name: 'docId_version_unique', unique: true },
  { key: { expireAt: 1 }, name: 'expiry_ttl', expireAfterSeconds: 0 },
];

/** What a commit does to the trash, from its writes. */
export interface TrashSteps {
  /** Deletes with a trash stamp: document and history move in (an older entry of the id goes). */
  moveIn: Array<{ id: string; stamp: TrashStamp }>;
  /** Deletes that erase for good: the id's trash entry, if any, goes too. */
  erase: string[];
  /** Puts from the trash: the entry must hold `trashedVersion`; its history moves back. */
  moveOut: Array<{ id: string; trashedVersion: number }>;
}

export function trashSteps(writes: readonly DocumentWrite[]): TrashSteps {
  const steps: TrashSteps = { moveIn: [], erase: [], moveOut: [] };
  for (const write of writes) {
    if (write.kind === 'delete') {
      if (write.trash) steps.moveIn.push({ id: write.id, stamp: write.trash });
      else if (write.erase) steps.erase.push(write.id);
    } else if (write.fromTrash) {
      steps.moveOut.push({ id: write.document._id, trashedVersion: write.document.$version - 1 });
    }
  }
  return steps;
}

/** The entry for a document deleted at `stamp`. */
export function trashDocOf(stored: StoredDocument, stamp: TrashStamp): TrashDoc {
  return {
    _id: stored._id,
    version: stored._folio.version,
    deletedAt: stamp.deletedAt,
    apiKeyHint: stamp.apiKeyHint,
    expiresAt: stamp.expiresAt,
    expireAt: new Date(stamp.expiresAt),
    document: stored,
  };
}

/** The reader's condition for entries after a position (newest first, then id descending). */
export function afterPosition(after: TrashPosition): Record<string, unknown> {
  return {
    $or: [{ deletedAt: { $lt: after.deletedAt } }, { deletedAt: after.deletedAt, _id: { $lt: after.id } }],
  };
}

function collectionsOf(db: Db, collection: string) {
  const names = trashCollectionNames(collection);
  return {
    entries: db.collection<TrashDoc>(names.entries),
    versions: db.collection<TrashVersionDoc>(names.versions),
  };
}

/** Create the trash sidecars' indexes (idempotent; createIndexes creates the collections). */
export async function ensureTrashCollections(db: Db, collection: string): Promise<void> {
  const names = trashCollectionNames(collection);
  await ensureIndexes(db, names.entries, TRASH_INDEXES);
  await ensureIndexes(db, names.versions, TRASH_VERSIONS_INDEXES);
}

/** Puts from the trash whose entry no longer holds the version they continue. */
export async function trashConflicts(
  db: Db,
  collection: string,
  steps: TrashSteps,
  session: ClientSession,
): Promise<WriteConflict[]> {
  if (steps.moveOut.length === 0) return [];
  const { entries } = collectionsOf(db, collection);
  const found = await entries
    .find({ _id: { $in: steps.moveOut.map((m) => m.id) } }, { session, projection: { _id: 1, version: 1 } })
    .toArray();
  const versions = new Map(found.map((e) => [e._id, e.version]));
  return steps.moveOut
    .filter((m) => versions.get(m.id) !== m.trashedVersion)
    .map((m) => ({ id: m.id, currentVersion: null }));
}

/**
 * Apply the steps inside the commit's transaction, before the document writes: entries moving
 * in read the document and history the same snapshot checked. Each step costs a fixed number of
 * round trips whatever the number of documents (every read and write names them all), so a bulk
 * delete of 500 stays a handful of operations in its transaction.
 */
export async function applyTrashSteps(
  db: Db,
  collection: string,
  versionsCollection: string,
  steps: TrashSteps,
  session: ClientSession,
): Promise<void> {
  const { entries, versions: trashVersions } = collectionsOf(db, collection);
  const history = db.collection<VersionRecord>(versionsCollection);
  const erase = async (ids: readonly string[]) => {
    if (ids.length === 0) return;
    await entries.deleteMany({ _id: { $in: [...ids] } }, { session });
    await trashVersions.deleteMany({ docId: { $in: [...ids] } }, { session });
  };
  if (steps.moveIn.length > 0) {
    const stored = await db
      .collection<StoredDocument>(collection)
      .find({ _id: { $in: steps.moveIn.map((m) => m.id) } }, { session })
      .toArray();
    const ids = stored.map((d) => d._id);
    const records =
      ids.length === 0
        ? []
        : await history.find({ docId: { $in: ids } }, { session, projection: { _id: 0 } }).toArray();
    const moved = trashMoves(steps.moveIn, stored, records);
    await erase(ids);
    if (moved.entries.length > 0) await entries.insertMany(moved.entries, { session });
    if (moved.versions.length > 0) await trashVersions.insertMany(moved.versions, { session });
  }
  await erase(steps.erase);
  if (steps.moveOut.length > 0) {
    const ids = steps.moveOut.map((m) => m.id);
    const records = await trashVersions
      .find({ docId: { $in: ids } }, { session, projection: { _id: 0, expireAt: 0 } })
      .toArray();
    if (records.length > 0) await history.insertMany(records as VersionRecord[], { session });
    await erase(ids);
  }
}

/**
 * What documents moving to the trash write there: an entry per document that exists (a delete
 * of a missing one writes nothing), and its history with the entry's expiry.
 */
export function trashMoves(
  moveIn: TrashSteps['moveIn'],
  stored: readonly StoredDocument[],
  records: readonly VersionRecord[],
): { entries: TrashDoc[]; versions: TrashVersionDoc[] } {
  const stamps = new Map(moveIn.map((m) => [m.id, m.stamp]));
  const entries: TrashDoc[] = [];
  for (const doc of stored) {
    const stamp = stamps.get(doc._id);
    if (stamp) entries.push(trashDocOf(doc, stamp));
  }
  const versions: TrashVersionDoc[] = [];
  for (const record of records) {
    const stamp = stamps.get(record.docId);
    if (stamp) versions.push({ ...record, expireAt: new Date(stamp.expiresAt) });
  }
  return { entries, versions };
}

export class MongoTrash implements TrashRepository {
  constructor(
    private readonly client: MongoClient,
    private readonly dbPrefix: string,
  ) {}

  #of(scope: DataScope, collection: string) {
    return collectionsOf(this.client.db(projectDbName(this.dbPrefix, scope)), collection);
  }

  async list(
    scope: DataScope,
    collection: string,
    options: { limit: number; now: string; after?: TrashPosition | undefined },
  ): Promise<TrashEntry[]> {
    const { entries } = this.#of(scope, collection);
    const live = { expiresAt: { $gt: options.now } };
    const filter = options.after ? { $and: [live, afterPosition(options.after)] } : live;
    const rows = await entries
      .find(filter, { sort: { deletedAt: -1, _id: -1 }, limit: options.limit })
      .toArray();
    return rows.map(entryOf);
  }

  async get(scope: DataScope, collection: string, id: string, now: string): Promise<TrashEntry | null> {
    const row = await this.#of(scope, collection).entries.findOne({ _id: id, expiresAt: { $gt: now } });
    return row ? entryOf(row) : null;
  }

  async listVersions(scope: DataScope, collection: string, id: string, now: string): Promise<VersionInfo[]> {
    if (!(await this.get(scope, collection, id, now))) return [];
    const rows = await this.#of(scope, collection)
      .versions.find({ docId: id }, { sort: { version: -1 }, projection: { document: 0 } })
      .toArray();
    return rows.map((r) => ({
      version: r.version,
      operation: r.operation,
      timestamp: r.timestamp,
      apiKeyHint: r.apiKeyHint,
    }));
  }

  async purge(scope: DataScope, collection: string, id: string): Promise<boolean> {
    const { entries, versions } = this.#of(scope, collection);
    // The entry first: it is what readers see; history left by a failure here expires by TTL.
    const { deletedCount } = await entries.deleteOne({ _id: id });
    await versions.deleteMany({ docId: id });
    return deletedCount > 0;
  }

  /** The TTL indexes erase expired entries (see the header); readers never see them. */
  async purgeExpired(): Promise<number> {
    return 0;
  }
}

function entryOf(row: TrashDoc): TrashEntry {
  return trashEntryOf(row._id, row, fromStored(row.document));
}
