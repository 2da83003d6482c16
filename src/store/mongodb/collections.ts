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
import { DOCUMENT_COLLECTION_OPTIONS, DOCUMENT_INDEXES, ensureIndexes, VERSIONS_INDEXES } from './indexes.js';
import { versionsCollectionName } from './naming.js';
import { isNamespaceExistsError } from './serverErrors.js';

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

/** Create the document collection with images, or switch them on; true when it repaired anything. */
async function ensureImages(db: Db, name: string): Promise<CollectionRepair> {
  try {
    await db.createCollection(name, DOCUMENT_COLLECTION_OPTIONS);
    return 'create';
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
    await db.command({ collMod: name, changeStreamPreAndPostImages: { enabled: true } });
  }
  return repair;
}

/** Everything a Folio collection needs; returns what had to be done about the images. */
async function ensureCollection(db: Db, collection: string): Promise<CollectionRepair> {
  const repair = await ensureImages(db, collection);
  await ensureIndexes(db, collection, DOCUMENT_INDEXES);
  // createIndexes creates the sidecar collection itself when it is missing.
  await ensureIndexes(db, versionsCollectionName(collection), VERSIONS_INDEXES);
  return repair;
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
  forget(dbName: string, collection: string): void {
    this.#known.delete(`${dbName}.${collection}`);
  }

  async #create(db: Db, collection: string): Promise<void> {
    await ensureCollection(db, collection);
  }

  async #recheck(db: Db, collection: string): Promise<void> {
    if (collectionRepair(await collectionInfo(db, collection)) === 'none') return;
    const repair = await ensureCollection(db, collection);
    this.warn(
      `MongoDB collection ${db.databaseName}.${collection} had been dropped or had lost its ` +
        `change-stream pre- and post-images (${repair === 'create' ? 're-created' : 'images switched on again'}). ` +
        'Do not drop Folio collections by hand while Folio runs.',
    );
  }
}
