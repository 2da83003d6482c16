/**
 * Folio collections are created by their first write. On MongoDB that means: the document
 * collection with pre- and post-images recorded (an existing one without them gets them
 * switched on), and its version sidecar with its unique index. Done outside the write's
 * transaction (collection options cannot be set by an implicit creation inside one), once per
 * collection per process.
 */
import type { Db, MongoClient } from 'mongodb';
import { DOCUMENT_COLLECTION_OPTIONS, ensureIndexes, VERSIONS_INDEXES } from './indexes.js';
import { versionsCollectionName } from './naming.js';
import { isNamespaceExistsError } from './serverErrors.js';

async function createWithImages(db: Db, name: string): Promise<void> {
  try {
    await db.createCollection(name, DOCUMENT_COLLECTION_OPTIONS);
    return;
  } catch (error) {
    // Another process (or an earlier run) created it: fine, if it records the images.
    if (!isNamespaceExistsError(error)) throw error;
  }
  const [info] = await db.listCollections({ name }).toArray();
  const options: unknown = info && 'options' in info ? info.options : undefined;
  const images = (options as { changeStreamPreAndPostImages?: { enabled?: unknown } } | undefined)
    ?.changeStreamPreAndPostImages;
  if (images?.enabled !== true) {
    await db.command({ collMod: name, changeStreamPreAndPostImages: { enabled: true } });
  }
}

async function ensureCollection(db: Db, collection: string): Promise<void> {
  await createWithImages(db, collection);
  // createIndexes creates the sidecar collection itself when it is missing.
  await ensureIndexes(db, versionsCollectionName(collection), VERSIONS_INDEXES);
}

export class CollectionRegistry {
  /** Per `db.collection`: done, or in progress (concurrent first writes share one attempt). */
  readonly #ready = new Map<string, Promise<void>>();

  constructor(private readonly client: MongoClient) {}

  async ensure(dbName: string, collection: string): Promise<void> {
    const key = `${dbName}.${collection}`;
    let ready = this.#ready.get(key);
    if (!ready) {
      ready = ensureCollection(this.client.db(dbName), collection);
      this.#ready.set(key, ready);
      // A failed attempt is forgotten, so the next write tries again.
      ready.catch(() => this.#ready.delete(key));
    }
    await ready;
  }
}
