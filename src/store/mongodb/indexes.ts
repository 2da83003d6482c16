/**
 * Every index and collection option the MongoDB store relies on, as data: `init()` and the first
 * write to a collection create them, and the unit tests check them key by key.
 */
import type { CreateCollectionOptions, Db, IndexDescription } from 'mongodb';
import type { SystemCollection } from './naming.js';

/** System-database indexes: uniqueness the port promises, lookups it needs, and TTL clean-up. */
export const SYSTEM_INDEXES: Readonly<Record<SystemCollection, readonly IndexDescription[]>> = {
  // Emails are unique regardless of case: the lower-cased copy carries the unique index.
  accounts: [{ key: { emailLower: 1 }, name: 'emailLower_unique', unique: true }],
  projects: [
    { key: { accountId: 1, name: 1 }, name: 'accountId_name_unique', unique: true },
    { key: { accountId: 1, createdAt: 1 }, name: 'accountId_createdAt' },
  ],
  keys: [
    { key: { keyHash: 1 }, name: 'keyHash_unique', unique: true },
    { key: { projectId: 1, createdAt: -1 }, name: 'projectId_createdAt' },
  ],
  // `expiresAt` is a BSON Date: MongoDB's TTL monitor removes a session once it has expired.
  // findSession still compares with `now`, because the monitor runs only once a minute.
  sessions: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
  // Rate-limit windows: a counter is removed once it has been idle for a while (see counters.ts).
  counters: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
  // A collection's webhooks, oldest first; the dispatcher's look-up adds status and events.
  webhooks: [
    { key: { projectId: 1, env: 1, collection: 1, createdAt: 1 }, name: 'scope_collection_createdAt' },
  ],
  // A webhook's history, newest first (and its pruning).
  webhookDeliveries: [{ key: { webhookId: 1, createdAt: -1, _id: -1 }, name: 'webhookId_newest' }],
  feedConsumers: [],
  settings: [],
  // Stream-slot leases: a holder's document goes once its last lease expired (see streamSlots.ts).
  streamSlots: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
};

/** Each version sidecar: one record per (document, version); also serves history listings. */
export const VERSIONS_INDEXES: readonly IndexDescription[] = [
  { key: { docId: 1, version: 1 }, name: 'docId_version_unique', unique: true },
];

/**
 * Document collections have no index besides `_id`: user filters are arbitrary, and the
 * default and tie-breaking sort is `_id`, which that index already serves.
 */
export const DOCUMENT_INDEXES: readonly IndexDescription[] = [];

/**
 * Document collections record pre- and post-images, so change events carry the exact document
 * at that version (and the deleted document on delete). Requires MongoDB 6.0.
 */
export const DOCUMENT_COLLECTION_OPTIONS: CreateCollectionOptions = {
  changeStreamPreAndPostImages: { enabled: true },
};

/** The indexes of a Folio collection and of its version sidecar, by role. */
export function documentCollectionIndexes(): {
  documents: readonly IndexDescription[];
  versions: readonly IndexDescription[];
} {
  return { documents: DOCUMENT_INDEXES, versions: VERSIONS_INDEXES };
}

/** Create the indexes (idempotent: an existing index with the same definition is left alone). */
export async function ensureIndexes(db: Db, collection: string, indexes: readonly IndexDescription[]) {
  if (indexes.length === 0) return;
  await db.collection(collection).createIndexes([...indexes]);
}

export async function ensureSystemIndexes(db: Db, collections: Readonly<Record<SystemCollection, string>>) {
  for (const [role, indexes] of Object.entries(SYSTEM_INDEXES) as Array<
    [SystemCollection, readonly IndexDescription[]]
  >) {
    await ensureIndexes(db, collections[role], indexes);
  }
}
