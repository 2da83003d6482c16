/**
 * Every index and collection option the MongoDB store relies on, as data: `init()` and the first
 * write to a collection create them, and the unit tests check them key by key.
 */
import type { CreateCollectionOptions, CreateIndexesOptions, Db, IndexDescription } from 'mongodb';
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
  // Automatic-index usage: a field's count goes once nobody queried it for a day (indexUsage.ts).
  indexUsage: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
  // Collection schemas: looked up by `_id` only (collectionSchemas.ts).
  collectionSchemas: [],
  // Attempt locks of crashed holders go by themselves (see attemptLocks.ts).
  attemptLocks: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
  // Webhook bodies of retries go once their time passed (see deliveryBodies.ts).
  webhookBodies: [{ key: { expiresAt: 1 }, name: 'expiresAt_ttl', expireAfterSeconds: 0 }],
};

/** Each version sidecar: one record per (document, version); also serves history listings. */
export const VERSIONS_INDEXES: readonly IndexDescription[] = [
  { key: { docId: 1, version: 1 }, name: 'docId_version_unique', unique: true },
];

/**
 * Document collections: besides `_id` (the default sort and the tie-breaker), one index per
 * metadata field, each ending in `_id`. The service sorts by `[field, d], ['_id', d]` (the
 * tie-breaker takes the last key's direction), so one index serves both `sort=$field` and
 * `sort=-$field` by a forward or backward scan, like the embedded store's indexes. User fields
 * have none: their filters are arbitrary.
 */
export const DOCUMENT_INDEXES: readonly IndexDescription[] = [
  { key: { '_folio.createdAt': 1, _id: 1 }, name: 'folio_createdAt_id' },
  { key: { '_folio.updatedAt': 1, _id: 1 }, name: 'folio_updatedAt_id' },
  { key: { '_folio.version': 1, _id: 1 }, name: 'folio_version_id' },
];

/**
 * Whether an index with `key` returns documents in `sort` order without a sort stage: the sort's
 * paths are the key's leading paths in order, with the key's directions all kept (forward scan)
 * or all reversed (backward scan).
 */
export function indexServesSort(
  key: Readonly<Record<string, unknown>>,
  sort: ReadonlyArray<readonly [path: string, direction: 1 | -1]>,
): boolean {
  const fields = Object.entries(key);
  if (sort.length === 0 || sort.length > fields.length) return false;
  const sign = sort[0]![1] === fields[0]![1] ? 1 : -1;
  return sort.every(([path, direction], i) => {
    const [field, order] = fields[i]!;
    return field === path && (order === 1 || order === -1) && direction === sign * order;
  });
}

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

/** How long one index build may run: under the reservation of a declared one (15 min). */
export const INDEX_BUILD_TIMEOUT_MS = 10 * 60_000;

/**
 * Every index build's bounds. `maxTimeMS`: the server aborts the build past it (the
 * createIndexes command aborts the build it waits on when interrupted), so a build never outlives
 * its reservation. `commitQuorum: "majority"`: the default waits for every voting data-bearing
 * member, so one member of three down would hold every build until the time limit.
 */
export const INDEX_BUILD_OPTIONS = {
  maxTimeMS: INDEX_BUILD_TIMEOUT_MS,
  commitQuorum: 'majority',
} as const satisfies CreateIndexesOptions;

/**
 * Create the indexes (idempotent: an existing index with the same definition is left alone),
 * within INDEX_BUILD_OPTIONS. Sent as the command itself: the driver's `createIndexes()` drops
 * `maxTimeMS` (mongodb 7.x). The descriptions here use the server's own option names.
 */
export async function ensureIndexes(db: Db, collection: string, indexes: readonly IndexDescription[]) {
  if (indexes.length === 0) return;
  await db.command({ createIndexes: collection, indexes: [...indexes], ...INDEX_BUILD_OPTIONS });
}

export async function ensureSystemIndexes(db: Db, collections: Readonly<Record<SystemCollection, string>>) {
  for (const [role, indexes] of Object.entries(SYSTEM_INDEXES) as Array<
    [SystemCollection, readonly IndexDescription[]]
  >) {
    await ensureIndexes(db, collections[role], indexes);
  }
}
