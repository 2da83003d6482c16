/**
 * Folio collections are created by their first write. On MongoDB that means: the document
 * collection with pre- and post-images recorded and its metadata indexes, and its version
 * sidecar with its unique index. Done outside the write's transaction (collection options
 * cannot be set by an implicit creation inside one).
 *
 * A collection can be dropped behind Folio's back (by hand, or by another tool); a write inside
 * a transaction would then re-create it implicitly, without pre- and post-images, and change
 * events for it would fail. So "ready" is not trusted for ever: a write re-checks the collection
 * once `collectionRecheckMs` has passed since the last check (one `listCollections` round trip)
 * and repairs what is missing; `forget()` makes the next write check at once (for whoever
 * learns of a drop first, e.g. the change source on an `invalidate` or a missing image).
 * Several instances doing this at the same moment all succeed.
 */
import type { CollectionInfo, Db, MongoClient } from 'mongodb';
import { isNamespaceExistsError } from '../database/serverErrors.js';
import { ensureTrashCollections } from '../documents/trash.js';
import { DOCUMENT_COLLECTION_OPTIONS, DOCUMENT_INDEXES, ensureIndexes, VERSIONS_INDEXES } from './indexes.js';
import { versionsCollectionName } from './naming.js';

export type CollectionRepair = 'create' | 'enableImages' | 'none';

/** What a document collection needs, from its `listCollections` entry (undefined: it is missing). */
export function collectionRepair(info: Pick<CollectionInfo, 'options'> | undefined): CollectionRepair {
  if (!info) return 'create';
  const images: unknown = info.options?.changeStreamPreAndPostImages;
  const enabled = typeof images === 'object' && images !== null && (images as { enabled?: unknown }).enabled;
  return enabled === true ? 'none' : 'enableImages';
}

/** Whether a check made at `checkedAtMs` must be made again before a write at `nowMs`. */
export function isCheckDue(checkedAtMs: number, nowMs: number, recheckMs: number): boolean {
  return nowMs - checkedAtMs >= recheckMs;
}

async function collectionInfo(db: Db, name: string): Promise<CollectionInfo | undefined> {
  const [info] = await db.listCollections({ name }).toArray();
  return info && 'options' in info ? info : undefined;
}

/** MongoDB's Unauthorized: the user lacks the privilege for the command. */
const UNAUTHORIZED = 13;

/**
 * Create the document collection with images, or switch them on. Returns what it did;
 * `'enableImages'` also when it could not because the user lacks `collMod` (`refused`).
 */
async function ensureImages(db: Db, name: string): Promise<{ repair: CollectionRepair; refused: boolean }> {
  try {
    await db.createCollection(name, DOCUMENT_COLLECTION_OPTIONS);
    return { repair: 'create', refused: false };
  } catch (error) {
    // Another process (or an earlier run, or an implicit creation) made it: fine, if it records
    // the images.
    if (!isNamespaceExistsError(error)) throw error;
  }
  const repair = collectionRepair(await collectionInfo(db, name));
  if (repair === 'create') {
    // Dropped again between our create and our look: the next write tries afresh.
    throw new Error(`collection ${db.databaseName}.${name} vanished while being created`);
  }
  if (repair === 'enableImages') {
    try {
      await db.command({ collMod: name, changeStreamPreAndPostImages: { enabled: true } });
    } catch (error) {
      // Writes go on without the repair (their change events may lack images); the caller warns.
      if ((error as { code?: unknown }).code !== UNAUTHORIZED) throw error;
      return { repair, refused: true };
    }
  }
  return { repair, refused: false };
}

/**
 * Everything a Folio collection needs; returns what was done about the images. The
 * metadata indexes of a collection that already existed are built in the background: on a large
 * collection (after an upgrade) that takes a while, and they only speed up sorts.
 */
async function ensureCollection(
  db: Db,
  collection: string,
  warn: (message: string) => void,
): Promise<{ repair: CollectionRepair; refused: boolean }> {
  const { repair, refused } = await ensureImages(db, collection);
  if (refused) {
    warn(
      `MongoDB collection ${db.databaseName}.${collection} does not record change-stream pre- and ` +
        'post-images and the user may not switch them on (collMod): its change events may fail.',
    );
  }
  const indexes = ensureIndexes(db, collection, DOCUMENT_INDEXES);
  if (repair === 'create') await indexes;
  else {
    indexes.catch((error: unknown) =>
      warn(`Could not create the metadata indexes of ${db.databaseName}.${collection}: ${String(error)}`),
    );
  }
  // createIndexes creates the sidecar collection itself when it is missing.
  await ensureIndexes(db, versionsCollectionName(collection), VERSIONS_INDEXES);
  await ensureTrashCollections(db, collection);
  return { repair, refused };
}

interface Readiness {
  /** The check (or creation) in flight or done; concurrent writes share it. */
  ready: Promise<void>;
  checkedAtMs: number;
}

export class CollectionRegistry {
  /** Per `db.collection`. */
  readonly #known = new Map<string, Readiness>();

  constructor(
    private readonly client: MongoClient,
    private readonly recheckMs: number,
    private readonly warn: (message: string) => void,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Resolves once the collection is known to be usable by a write. */
  async ensure(dbName: string, collection: string): Promise<void> {
    const key = `${dbName}.${collection}`;
    const known = this.#known.get(key);
    const now = this.nowMs();
    if (known && !isCheckDue(known.checkedAtMs, now, this.recheckMs)) return known.ready;
    const db = this.client.db(dbName);
    const ready = known ? this.#recheck(db, collection) : this.#create(db, collection);
    this.#known.set(key, { ready, checkedAtMs: now });
    // A failed attempt is forgotten, so the next write tries again.
    ready.catch(() => {
      if (this.#known.get(key)?.ready === ready) this.#known.delete(key);
    });
    return ready;
  }

  /** The next write to the collection checks it first (call on learning it was dropped). */
  forget(dbName: string, collection: string | null): void {
    if (collection !== null) {
      this.#known.delete(`${dbName}.${collection}`);
      return;
    }
    // A dropped database: every collection of it.
    for (const key of [...this.#known.keys()]) if (key.startsWith(`${dbName}.`)) this.#known.delete(key);
  }

  async #create(db: Db, collection: string): Promise<void> {
    await ensureCollection(db, collection, this.warn);
  }

  async #recheck(db: Db, collection: string): Promise<void> {
    if (collectionRepair(await collectionInfo(db, collection)) === 'none') return;
    const { repair, refused } = await ensureCollection(db, collection, this.warn);
    if (refused) return;
    this.warn(
      `MongoDB collection ${db.databaseName}.${collection} had been dropped or had lost its ` +
        `change-stream pre- and post-images (${repair === 'create' ? 're-created' : 'images switched on again'}). ` +
        'Do not drop Folio collections by hand while Folio runs.',
    );
  }
}
