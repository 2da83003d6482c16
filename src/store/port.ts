/**
 * The storage port: everything Folio needs from a store, and what each store guarantees.
 *
 * Two implementations exist, `embedded/` (SQLite) and `mongodb/`; both pass the one conformance
 * suite in `test/store/`. Stores hold no business rules: plans, version numbering, patching and
 * validation live in `services/`. A store persists what it is given, atomically, and answers
 * queries with MongoDB's semantics.
 *
 * The port is in parts, one file each under `port/`; import from here.
 */

/** Accounts, sessions, projects, API keys; rate-limit counters; stream-slot leases. */
export * from './port/accounts.js';
/** The change feed: committed changes in commit order, resumable by token. */
export * from './port/changes.js';
/** JSON shapes, data scopes, document writes and queries, the document repository. */
export * from './port/documents.js';
/** Errors any repository may throw (duplicate, rejected query, unavailable, start failure). */
export * from './port/errors.js';
/** Declared indexes and their usage. */
export * from './port/indexes.js';
/** Background jobs: Agenda's backend on the store. */
export * from './port/jobs.js';
/** Collection schemas. */
export * from './port/schemas.js';
/** Snapshots: the whole store at one point in time (backup, restore, migrate). */
export * from './port/snapshots.js';
/** The store itself: its repositories and lifecycle (init, ping, close). */
export * from './port/store.js';
/** Trash: deleted documents kept until they expire. */
export * from './port/trash.js';
/** Webhooks, their deliveries, attempt locks, queued bodies and the feed consumer's lease. */
export * from './port/webhooks.js';
