/**
 * Where each piece of Folio data lives on a MongoDB deployment.
 *
 * - one database per project environment: `<prefix>_<project>_<env>`;
 * - in it, one MongoDB collection per Folio collection, under the same name;
 * - beside each, its version history in `_folio.versions.<collection>`: Folio collection names
 *   start with a letter or digit and never contain a dot, so no Folio collection can take it;
 * - accounts, projects, keys, sessions, rate-limit counters, stream slots and Agenda's jobs in
 *   `<prefix>_system`; webhooks, their deliveries, feed consumers (lease and position) and
 *   settings there too.
 *
 * MongoDB database names are at most 63 bytes, may not contain `/\. "$*<>:|?`, and two names
 * that differ only in case cannot coexist. Every name built here respects that.
 */
import { createHash } from 'node:crypto';
import type { DataScope } from '../../port.js';

export const DEFAULT_DB_PREFIX = 'folio';

/** The configuration's rule (`mongodb.dbPrefix`): short enough that every name fits 63 bytes. */
export const DB_PREFIX_PATTERN = /^[A-Za-z][A-Za-z0-9_]{0,19}$/;

/** Folio collection names (the services enforce the same rule before anything reaches a store). */
export const COLLECTION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** MongoDB's limit on database names, in bytes. */
export const MAX_DB_NAME_BYTES = 63;

/** Canonical project ids: `prj_` + a ULID (Crockford base32, upper case). */
const CANONICAL_PROJECT_ID = /^prj_[0-9A-HJKMNP-TV-Z]{26}$/;

export const SYSTEM_COLLECTIONS = {
  accounts: 'accounts',
  projects: 'projects',
  keys: 'keys',
  sessions: 'sessions',
  counters: 'counters',
  webhooks: 'webhooks',
  webhookDeliveries: 'webhookDeliveries',
  feedConsumers: 'feedConsumers',
  settings: 'settings',
  streamSlots: 'streamSlots',
  indexUsage: 'indexUsage',
  collectionSchemas: 'collectionSchemas',
  attemptLocks: 'attemptLocks',
  webhookBodies: 'webhookBodies',
} as const;

export type SystemCollection = keyof typeof SYSTEM_COLLECTIONS;

/** Where Agenda keeps its jobs, inside the system database. */
export const AGENDA_JOBS_COLLECTION = 'agendaJobs';

export function assertDbPrefix(prefix: string): void {
  if (!DB_PREFIX_PATTERN.test(prefix)) {
    throw new Error(
      `Invalid MongoDB database prefix "${prefix}": use 1-20 letters, digits or _, starting with a letter.`,
    );
  }
}

export function assertCollectionName(name: string): void {
  if (!COLLECTION_NAME_PATTERN.test(name)) {
    throw new Error(`Invalid collection name "${name}" reached the MongoDB store.`);
  }
}

/**
 * The database-name part for a project id. Canonical ids are kept readable, lower-cased (ULIDs
 * are case-insensitive, so this stays one-to-one and avoids MongoDB's case clash between
 * database names). Any other id is hashed: `x` + 32 hex digits can never look like `prj_...`.
 */
export function projectSegment(projectId: string): string {
  if (CANONICAL_PROJECT_ID.test(projectId)) return projectId.toLowerCase();
  return `x${createHash('sha256').update(projectId, 'utf8').digest('hex').slice(0, 32)}`;
}

/** The database holding one project environment's collections. */
export function projectDbName(prefix: string, scope: DataScope): string {
  assertDbPrefix(prefix);
  return `${prefix}_${projectSegment(scope.projectId)}_${scope.env}`;
}

/**
 * A regular expression (source) matching exactly the project databases of `prefix`: what the
 * store's change stream selects. Anchored with the exact segment shapes, so another deployment
 * whose prefix merely starts with this one (`folio` vs `folio_a`) never matches.
 */
export function projectDbPattern(prefix: string): string {
  assertDbPrefix(prefix);
  return `^${prefix}_(prj_[0-9a-hjkmnp-tv-z]{26}|x[0-9a-f]{32})_(live|test)$`;
}

/**
 * The scope a project database holds, when its name says so: canonical project ids are kept
 * readable (lower-cased ULIDs, upper-cased back here); hashed ones cannot be read back (null).
 */
export function scopeFromDbName(prefix: string, dbName: string): DataScope | null {
  assertDbPrefix(prefix);
  const head = `${prefix}_prj_`;
  if (!dbName.startsWith(head)) return null;
  const match = /^([0-9a-hjkmnp-tv-z]{26})_(live|test)$/.exec(dbName.slice(head.length));
  if (!match) return null;
  return { projectId: `prj_${match[1]!.toUpperCase()}`, env: match[2] as DataScope['env'] };
}

/** The database holding accounts, projects, keys, sessions, counters and jobs. */
export function systemDbName(prefix: string): string {
  assertDbPrefix(prefix);
  // Ends in `_system`, while every project database ends in `_live` or `_test`.
  return `${prefix}_system`;
}

/** The sidecar collection holding a Folio collection's version records. */
export function versionsCollectionName(collection: string): string {
  assertCollectionName(collection);
  return `_folio.versions.${collection}`;
}

/** The sidecars holding a Folio collection's trash: entries, and their version records. */
export function trashCollectionNames(collection: string): { entries: string; versions: string } {
  assertCollectionName(collection);
  return { entries: `_folio.trash.${collection}`, versions: `_folio.trashVersions.${collection}` };
}

/** True for names this store manages besides the Folio collections themselves. */
export function isSidecarCollection(name: string): boolean {
  return name.startsWith('_folio.');
}
