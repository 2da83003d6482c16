/**
 * The storage port: everything Folio needs from a store, and what each store guarantees.
 *
 * Two implementations exist, `embedded/` (SQLite) and `mongodb/`; both pass the one conformance
 * suite in `test/store/`. Stores hold no business rules: plans, version numbering, patching and
 * validation live in `services/`. A store persists what it is given, atomically, and answers
 * queries with MongoDB's semantics.
 */
import type { AgendaBackend } from 'agenda';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export type Env = 'live' | 'test';

/** One project environment: the unit of data isolation. Data never crosses scopes. */
export interface DataScope {
  readonly projectId: string;
  readonly env: Env;
}

/** A document as the API shows it: user fields plus the four managed metadata fields. */
export interface FolioDocument extends JsonObject {
  _id: string;
  $createdAt: string;
  $updatedAt: string;
  $version: number;
}

export type WriteOperation = 'create' | 'update' | 'patch' | 'restore';

/** One element of a document's history, as listed (newest first). */
export interface VersionInfo {
  version: number;
  operation: WriteOperation;
  timestamp: string;
  apiKeyHint: string;
}

/** Store the given document as the new current state, with a version record of it. */
export interface PutWrite {
  kind: 'put';
  /**
   * The `$version` the writer read: 0 means the document must not exist; n > 0 means its
   * current `$version` must be n. `document.$version` must be `expectedVersion + 1`.
   */
  expectedVersion: number;
  document: FolioDocument;
  operation: WriteOperation;
  apiKeyHint: string;
  /** Keep at most this many version records of the document; the oldest go, in the same unit. */
  keepVersions: number;
  /**
   * The document comes back from the collection's trash: `expectedVersion` is 0 (no document of
   * that id may exist), `document.$version` is the trashed version + 1, the trashed history
   * returns with it (continuous) and the trash entry is gone, in the same unit. A conflict
   * (`currentVersion` null) when the trash no longer holds the id at `document.$version - 1`.
   */
  fromTrash?: boolean;
  /**
   * `JSON.stringify(document)`, when the writer has it already (it measured the document): a
   * store may write it instead of serialising the document again.
   */
  json?: string;
}

/**
 * Remove the document and its whole history. With `trash`, both move to the collection's trash
 * instead (replacing an older trash entry of the same id).
 */
export interface DeleteWrite {
  kind: 'delete';
  id: string;
  /** The `$version` the writer read; the delete happens only if it is still current. */
  expectedVersion: number;
  trash?: TrashStamp;
  /**
   * Erase for good (the right to be forgotten), not with `trash`: any trash entry of the id goes
   * too, and the store keeps no copy of the document where it can help it. The embedded store's
   * change log then keeps only `_id` and metadata of the document's events, this delete's
   * `deleted` event included.
   */
  erase?: boolean;
}

/** Who deleted a document into the trash, when, and until when the trash keeps it. */
export interface TrashStamp {
  deletedAt: string;
  apiKeyHint: string;
  expiresAt: string;
}

export type DocumentWrite = PutWrite | DeleteWrite;

export interface WriteConflict {
  id: string;
  /** The document's current `$version`, or null when it does not exist. */
  currentVersion: number | null;
}

export type CommitResult = { ok: true } | { ok: false; conflicts: WriteConflict[] };

export interface CommitOptions {
  /**
   * False: the store may answer before the commit reaches the disk, provided a later `sync()`
   * (or any later durable commit) carries it there, and its change events are published no
   * earlier than that. The commit is visible to reads at once. Default true.
   *
   * Either way, a commit is applied after the commits of its collection made before it with
   * `durable: false`, even those not resolved yet (a bulk request's operations, one made as
   * soon as the one before it was).
   */
  durable?: boolean;
}

/** Ascending (1) or descending (-1), MongoDB-style. */
export type SortDirection = 1 | -1;

/**
 * A query in canonical form. `filter` is a MongoDB filter document over the *stored* form of
 * documents (see `storedForm.ts`), restricted to what `src/query/` generates: `$and`, `$in`,
 * `$nin`, `$gt`, `$gte`, `$lt`, `$lte`, `$regex` with `$options: 'i'`, `$exists`; `$or` and `$nor`
 * in cursor keysets (`src/store/documentQuery/cursor.ts`).
 */
export interface FindQuery {
  filter: StoredFilter;
  /** Sort keys in order, over stored paths; the service always ends it with `_id`. */
  sort: Array<[path: string, direction: SortDirection]>;
  skip: number;
  limit: number;
  /** Stored paths to include (MongoDB inclusion projection); `_id` is always included. */
  projection?: string[] | undefined;
  /**
   * A cursor page: only the rows strictly after this position in `sort` (the last row's sort
   * keys and `_id`, MongoDB's sort order). The embedded store compares sort keys exactly and
   * seeks to the position in an index; MongoDB adds the canonical keyset filter
   * (`positionFilter` in src/store/documentQuery/cursor.ts).
   */
  after?: SortPosition | undefined;
}

/** A row's place in a sort: its key per sort path (`_id` excluded) and its `_id`. */
export interface SortPosition {
  keys: Array<null | number | string | boolean>;
  id: string;
}

/** A MongoDB filter document (structurally JSON). */
export type StoredFilter = { [key: string]: JsonValue };

/** A collection and how many documents it holds (`listCollections`). */
export interface CollectionInfo {
  name: string;
  documents: number;
}

export interface DocumentRepository {
  /** The current document, or null. */
  get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null>;
  /**
   * Apply all writes atomically: every document write, its version record (with pruning) and
   * its change event commit together or not at all. Every write is conditioned on its
   * `expectedVersion`; if any condition fails nothing is written and every failing id is
   * reported. A collection is created by its first write. Throws only on store failure.
   */
  commit(
    scope: DataScope,
    collection: string,
    writes: DocumentWrite[],
    options?: CommitOptions,
  ): Promise<CommitResult>;
  /**
   * Resolves once every commit made with `durable: false` is as durable as any other commit.
   * Immediate when none is pending, and on a store whose commits are all durable on their own.
   */
  sync(): Promise<void>;
  /** Documents matching the query, in the query's order, projected. */
  find(scope: DataScope, collection: string, query: FindQuery): Promise<FolioDocument[]>;
  /**
   * The same documents as `find`, streamed: memory stays flat whatever the result size, and the
   * first document arrives before the last one is read. Reads one consistent snapshot where
   * the store can (embedded: one read transaction on a connection of its own, so writers are
   * never blocked). Leaving the loop early (`break`, `return`, a thrown error) releases the
   * cursor. A refused query shape throws QueryRejectedError on the first step.
   */
  scan(scope: DataScope, collection: string, query: FindQuery): AsyncIterable<FolioDocument>;
  /**
   * Optional: `scan` without a projection, each document as the text JSON.stringify gives of
   * the one `scan` yields, a page of them at a time. A store that builds the text itself
   * (embedded: SQLite) spares an export parsing and serialising every document.
   */
  scanJson?(scope: DataScope, collection: string, query: FindQuery): AsyncIterable<string[]>;
  /**
   * Number of documents matching the filter; with `upTo`, counting stops there (the answer is
   * then at most `upTo`), so a bounded count never reads every match.
   */
  count(scope: DataScope, collection: string, filter: StoredFilter, upTo?: number): Promise<number>;
  /**
   * How the store answers `find(query)`: it runs the query once and reports the declared index
   * it used (or none), whether it walked the whole collection, and how many documents it read.
   */
  explain(scope: DataScope, collection: string, query: FindQuery): Promise<QueryPlan>;
  /**
   * The scope's collections that hold at least one document, by name (ascending, code-unit
   * order), each with its document count. Never another scope's collections.
   */
  listCollections(scope: DataScope): Promise<CollectionInfo[]>;
  /** The document's history, newest first; empty when the document does not exist. */
  listVersions(scope: DataScope, collection: string, id: string): Promise<VersionInfo[]>;
  /** The full document as it was at that version, or null if that version is not stored. */
  getVersion(
    scope: DataScope,
    collection: string,
    id: string,
    version: number,
  ): Promise<FolioDocument | null>;
}

export type ChangeType = 'created' | 'updated' | 'deleted';

/**
 * One committed document change. Tokens are store-wide and resumable on any instance sharing
 * the store: pass one as `after` to continue just after that event.
 */
export interface ChangeEvent {
  /** Opaque, store-wide, strictly increasing in commit order. */
  token: string;
  /** The project environment the write belongs to. */
  scope: DataScope;
  type: ChangeType;
  collection: string;
  documentId: string;
  /** The document at that version; for `deleted`, the document as it was just before. */
  document: FolioDocument;
  /** ISO 8601 commit time. */
  timestamp: string;
}

/** Why a subscription ended without its owner closing it. */
export type ChangeFeedEnd =
  /** `after` is older than the retained history (expired): events after it are gone. */
  | 'history_lost'
  /** `after` is malformed or was never issued by this store. */
  | 'invalid_token'
  /** The collection (or its database) was dropped or renamed under the feed. */
  | 'invalidated'
  /** The subscriber fell more than `bufferLimit` events behind. */
  | 'overflow'
  /** The store is shutting down. */
  | 'store_closed'
  /**
   * The store's change source failed in a way reopening cannot clear (MongoDB: privileges
   * revoked, a stream the server refuses), or did not start in time: resume later from the last
   * token taken, here or on another instance.
   */
  | 'unavailable';

export interface WatchOptions {
  /** Resume just after this token (from a ChangeEvent); omitted = from now. */
  after?: string | undefined;
  /** Most undelivered events this subscription may hold before it ends with 'overflow' (default 10,000). */
  bufferLimit?: number | undefined;
}

/** Default `WatchOptions.bufferLimit`. */
export const DEFAULT_BUFFER_LIMIT = 10_000;

export interface ChangeSubscription extends AsyncIterable<ChangeEvent> {
  /** Stop receiving; the iterator finishes at once (events not yet taken are dropped). Idempotent. */
  close(): void;
  /**
   * Set once the feed ended for a reason other than `close()`. The iterator then finishes at
   * once, dropping events not yet taken: resume after the last token taken.
   */
  readonly endedBy: ChangeFeedEnd | null;
  /**
   * Resolves once the subscription is established: its source is reading (events committed from
   * then on are delivered) and, with `after`, its resume point was accepted; or once it ended
   * (check `endedBy`). Never rejects. Lets a caller answer "cannot resume" before it commits to
   * a response.
   */
  readonly ready: Promise<void>;
  /**
   * The same queue without promises, for a consumer serving many subscriptions (the SSE
   * streams): `take()` returns the next queued event, or undefined when none is queued now;
   * `onQueued` is called synchronously (from the store's fan-out, so it must not throw) when an
   * event is queued and when the subscription ends. Use this or the iterator, not both.
   */
  take(): ChangeEvent | undefined;
  onQueued(listener: (() => void) | null): void;
  /** Whether it still reads history (a resume's catch-up); false once live. */
  readonly catchingUp: boolean;
  /**
   * Pace a catch-up by its consumer's client: while held, no further page of history is read
   * (the history stays in the store, not in memory). No effect once live.
   */
  holdHistory(hold: boolean): void;
  /**
   * Optional (MongoDB): a token to resume from although no event came, or null. While the
   * subscription is live and has handed out everything, the store's shared source moves on
   * over other collections' writes; resuming from this token loses nothing, so a client on a
   * quiet collection can move its last event id (an SSE checkpoint) before its old one leaves
   * the store's history.
   */
  checkpoint?(): string | null;
  /**
   * For a subscription from now: a token to resume from that loses none of its events (the live
   * source's position when it joined), once known; null while unknown.
   */
  readonly startPosition?: string | null;
}

/**
 * The store-wide change feed. Each store keeps ONE change source per process over everything
 * Folio writes (never one per collection or per subscriber) and fans it out in process to
 * subscriptions keyed by scope and collection, plus `watchAll`.
 *
 * Guarantees, for every subscription:
 * - events come in commit order, each once; a subscription sees only its own scope/collection;
 * - without `after` it delivers every change committed after `watch()` returned (at the latest,
 *   after `ready` resolved);
 * - with `after` it first catches up from history (its own catch-up read, closed as soon as it
 *   has caught up, not at the next write) and then joins the live fan-out with no gap and no
 *   duplicate. History is kept at least `events.retentionMs`; older tokens end it with
 *   `history_lost`, malformed or foreign ones with `invalid_token`;
 * - a slow subscriber never delays the others: more than `bufferLimit` undelivered events end it
 *   with `overflow` (resume after the last token taken);
 * - transient source failures (MongoDB network errors, elections) are invisible: the source
 *   reopens from its last position with backoff. Only a resume point that is really gone or
 *   malformed, a dropped collection, an overflow or the store closing end a subscription.
 */
export interface ChangeFeed {
  /** Committed changes of one collection of one scope, in commit order. */
  watch(scope: DataScope, collection: string, options?: WatchOptions): ChangeSubscription;
  /** Committed changes of every scope and collection, in commit order (the webhook dispatcher). */
  watchAll(options?: WatchOptions): ChangeSubscription;
  /** Open database sources in this process: 0 or 1, whatever the number of subscriptions. */
  readonly sourceCount: number;
}

export type Plan = 'free' | 'pro' | 'team';
export type KeyScope = 'read-write' | 'read-only';
export type KeyStatus = 'active' | 'revoked';

export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string;
  plan: Plan;
  createdAt: string;
}

export interface SessionRecord {
  tokenHash: string;
  accountId: string;
  createdAt: string;
  expiresAt: string;
}

export interface ProjectRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: string;
  /**
   * Browser origins allowed to call the project's data routes with any of its keys, or null for
   * the default policy (any origin for read-only keys, none for read-write keys).
   */
  allowedOrigins: string[] | null;
  /**
   * Automatic indexes for the project's collections: on, off, or null/absent for the server's
   * default (configuration `autoIndexes.enabled`).
   */
  autoIndexes?: boolean | null;
}

export interface ApiKeyRecord {
  id: string;
  projectId: string;
  name: string;
  env: Env;
  scope: KeyScope;
  config: JsonObject;
  status: KeyStatus;
  /** SHA-256 of the raw key, hex. The raw key is never stored. */
  keyHash: string;
  /** `folio_sk_<env>_...abcd` */
  hint: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  rotatedFrom: string | null;
}

/** Thrown when a unique field (email, project name within an account, key hash) is taken. */
export class DuplicateError extends Error {
  constructor(readonly field: string) {
    super(`duplicate ${field}`);
    this.name = 'DuplicateError';
  }
}

/**
 * The store cannot answer a query the service considers valid (MongoDB refuses, for example, a
 * sort over two parallel arrays). The service answers 400 naming `param`.
 */
export class QueryRejectedError extends Error {
  constructor(
    readonly param: 'filter' | 'sort' | 'select',
    message: string,
  ) {
    super(message);
    this.name = 'QueryRejectedError';
  }
}

/**
 * The store cannot answer in time, or at all, right now (a query over its time limit, a write
 * whose replication was not confirmed in time, no reachable primary). Thrown by any repository
 * method; the client gets a 503 with `Retry-After`. `message` is safe to show to the client.
 */
export class StoreUnavailableError extends Error {
  constructor(
    /** `query_timeout`, `write_unconfirmed` (the write may or may not have been applied) or `store_unavailable`. */
    readonly reason: 'query_timeout' | 'write_unconfirmed' | 'store_unavailable',
    message: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * `init()` found the store unusable (unreachable, misconfigured, missing a capability). The
 * message says what is wrong and how to fix it, in one line; the CLI prints it as is.
 */
export class StoreStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreStartError';
  }
}

export interface AccountRepository {
  /** Throws DuplicateError('email') if the email (compared lower-cased) is taken. */
  createAccount(account: AccountRecord): Promise<void>;
  getAccount(id: string): Promise<AccountRecord | null>;
  findAccountByEmail(email: string): Promise<AccountRecord | null>;
  setPlan(accountId: string, plan: Plan): Promise<void>;
  countAccounts(): Promise<number>;

  createSession(session: SessionRecord): Promise<void>;
  /** The session, or null when unknown or expired at `now`. */
  findSession(tokenHash: string, now: string): Promise<SessionRecord | null>;
  deleteSession(tokenHash: string): Promise<void>;

  /** Throws DuplicateError('name') if the account already has a project of that name. */
  createProject(project: ProjectRecord): Promise<void>;
  getProject(id: string): Promise<ProjectRecord | null>;
  findProject(accountId: string, name: string): Promise<ProjectRecord | null>;
  listProjects(accountId: string): Promise<ProjectRecord[]>;
  /** Replace the project's allowed origins (null: the default policy). */
  setAllowedOrigins(projectId: string, origins: string[] | null): Promise<void>;
  /** Set the project's automatic-index setting (null: the server's default). */
  setAutoIndexes(projectId: string, enabled: boolean | null): Promise<void>;

  /**
   * Create the key unless its project already has `maxActive` active keys: false then, and
   * nothing written. Atomic: concurrent creates never take a project past the maximum.
   * Throws DuplicateError('id') or DuplicateError('keyHash') if either is taken.
   */
  createKey(key: ApiKeyRecord, maxActive: number): Promise<boolean>;
  getKey(id: string): Promise<ApiKeyRecord | null>;
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  /**
   * The key with its project and that project's account, in one round trip to the store (what
   * authenticating a request needs); null when any of the three is unknown.
   */
  resolveKey(keyHash: string): Promise<ResolvedKey | null>;
  /** Keys of a project, newest first. */
  listKeys(projectId: string): Promise<ApiKeyRecord[]>;
  countActiveKeys(projectId: string): Promise<number>;
  /** Mark the key revoked; returns false if it was not active. */
  revokeKey(id: string, at: string): Promise<boolean>;
  /** Atomically revoke the old key and insert its replacement; false if the old one was not active. */
  rotateKey(oldId: string, replacement: ApiKeyRecord, at: string): Promise<boolean>;
  /** Best-effort last-use stamp. */
  touchKey(id: string, at: string): Promise<void>;
}

/** An API key and what owns it, as `AccountRepository.resolveKey` returns them. */
export interface ResolvedKey {
  key: ApiKeyRecord;
  project: ProjectRecord;
  account: AccountRecord;
}

export interface CounterRepository {
  /**
   * Count one hit against `key` in a window that opens at the first hit and lasts `windowMs`.
   * Atomic: concurrent hits (from any number of processes sharing the store) are all counted.
   * `nowMs` is the caller's clock. A store shared by several processes decides windows by one
   * clock of its own instead (so instances with skewed clocks agree) and reports `resetAtMs`
   * translated into the caller's clock: the time left in the window is what it says.
   */
  hit(key: string, windowMs: number, nowMs: number): Promise<{ count: number; resetAtMs: number }>;
}

/**
 * Leases on concurrent-stream slots, per holder (an API key id). Each open stream holds one slot;
 * a slot not renewed within its time to live is free again, so a crashed instance's streams stop
 * counting. The embedded store (one process) may keep them in memory.
 */
export interface StreamSlotRepository {
  /**
   * Take a slot for `slotId` if the holder has fewer than `max` live ones. Atomic: any number of
   * processes sharing the store never hand out more than `max`. False when all are taken.
   */
  acquire(holder: string, slotId: string, max: number, ttlMs: number): Promise<boolean>;
  /** Extend a held slot to `ttlMs` from now; false when it is no longer held (expired). */
  renew(holder: string, slotId: string, ttlMs: number): Promise<boolean>;
  /** Free the slot at once. Idempotent. */
  release(holder: string, slotId: string): Promise<void>;
}

/** Upkeep of the job store done by the server: counts and deletes, never a load of all jobs. */
export interface JobUpkeep {
  /** Remove jobs of `name` that completed (not failed last, nothing due, unlocked) before `beforeMs`. */
  removeCompletedBefore(name: string, beforeMs: number): Promise<number>;
}

/** Agenda's backend whose repository also does `JobUpkeep`. */
export interface JobBackend extends AgendaBackend {
  readonly repository: AgendaBackend['repository'] & JobUpkeep;
}

export interface Store {
  readonly kind: 'embedded' | 'mongodb';
  readonly documents: DocumentRepository;
  /** Indexes declared by the collection's owner (`/{ns}/{collection}/_indexes`). */
  readonly indexes: IndexRepository;
  readonly changes: ChangeFeed;
  readonly accounts: AccountRepository;
  readonly counters: CounterRepository;
  readonly webhooks: WebhookRepository;
  readonly deliveries: DeliveryRepository;
  readonly consumers: FeedConsumerRepository;
  readonly attemptLocks: AttemptLockRepository;
  /** Webhook bodies of deliveries waiting for a retry: once per event, not per webhook. */
  readonly deliveryBodies: DeliveryBodyRepository;
  readonly streamSlots: StreamSlotRepository;
  /** The whole store at one point in time, and written back (backup, restore, migrate). */
  readonly snapshots: SnapshotRepository;
  /** Collection schemas (`/{ns}/{collection}/_schema`). */
  readonly schemas: SchemaRepository;
  /** Deleted documents kept for a while (`/{ns}/{collection}/_trash`). */
  readonly trash: TrashRepository;
  /**
   * Agenda's backend on this store's own connection, for background jobs. A job saved with
   * `unique({'data.dedupeKey': k}, {insertOnly: true})` exists at most once per name store-wide,
   * however many processes save it at the same moment.
   */
  agendaBackend(): JobBackend;
  /** Create schemas and indexes; verify the server is usable. Idempotent. */
  init(): Promise<void>;
  /** Resolves when the store answers a trivial request now; rejects otherwise (health checks). */
  ping(): Promise<void>;
  /** End subscriptions and release connections. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Webhooks: registrations, their delivery history, and the change-feed consumer's lease.

export type WebhookStatus = 'active' | 'disabled';

/** A webhook of one collection of one scope. */
export interface WebhookRecord {
  id: string;
  scope: DataScope;
  collection: string;
  url: string;
  /** Event type names it receives (`document.created`, ...). */
  events: string[];
  description: string;
  status: WebhookStatus;
  /** The signing secret as the service sealed it; the store keeps it as given. */
  sealedSecret: string;
  /** Failed deliveries in a row since the last success or re-enable. */
  consecutiveFailures: number;
  createdAt: string;
  updatedAt: string;
}

/** Fields an update may set; absent fields keep their value. */
export type WebhookChanges = Partial<
  Pick<WebhookRecord, 'url' | 'events' | 'description' | 'status' | 'sealedSecret' | 'consecutiveFailures'>
> & { updatedAt: string };

export interface WebhookRepository {
  /**
   * Create the webhook unless its collection already holds `maxPerCollection`: false then, and
   * nothing written. Atomic: concurrent creates never take the collection past the maximum.
   * Throws DuplicateError('id') if the id is taken.
   */
  create(webhook: WebhookRecord, maxPerCollection: number): Promise<boolean>;
  /** The webhook, or null when it does not exist in that scope and collection. */
  get(scope: DataScope, collection: string, id: string): Promise<WebhookRecord | null>;
  /** Webhooks of the collection, oldest first. */
  list(scope: DataScope, collection: string): Promise<WebhookRecord[]>;
  count(scope: DataScope, collection: string): Promise<number>;
  /** Active webhooks of the collection that receive `event`, oldest first. */
  listActive(scope: DataScope, collection: string, event: string): Promise<WebhookRecord[]>;
  /** Apply the changes; the updated webhook, or null when it does not exist. */
  update(
    scope: DataScope,
    collection: string,
    id: string,
    changes: WebhookChanges,
  ): Promise<WebhookRecord | null>;
  /** Remove the webhook and its whole delivery history; false when it did not exist. */
  delete(scope: DataScope, collection: string, id: string): Promise<boolean>;
  /** A delivery succeeded: the failure count goes back to 0. */
  recordSuccess(id: string): Promise<void>;
  /**
   * A delivery failed: atomically add one to the failure count and, when the count reaches
   * `disableAt`, set the status to `disabled`. The webhook after the change, or null if gone.
   */
  recordFailure(id: string, disableAt: number, at: string): Promise<WebhookRecord | null>;
  /**
   * The key that seals webhook secrets when the configuration gives none: created with
   * `generate()` on first use, the same for every process on this store from then on.
   */
  sealingKey(generate: () => Buffer): Promise<Buffer>;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

/** One HTTP attempt of a delivery. */
export interface DeliveryAttempt {
  /** 1 for the first attempt, 2 for the first retry, ... */
  number: number;
  at: string;
  /** The receiver's status code, or null when there was no answer. */
  statusCode: number | null;
  /** Why the attempt failed (timeout, connection error, refused target), or null. */
  error: string | null;
  durationMs: number;
  /** When the next attempt is due; null when this one was the last. */
  nextRetryAt: string | null;
}

/** One event sent to one webhook, with every attempt made. */
export interface DeliveryRecord {
  id: string;
  webhookId: string;
  event: string;
  documentId: string | null;
  /** The event's own time (commit time, or the test's). */
  eventTimestamp: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  createdAt: string;
  updatedAt: string;
}

export interface DeliveryRepository {
  /**
   * Insert or replace the delivery by id. When it was new, the webhook keeps only its `keep`
   * newest deliveries (by createdAt, then id); older ones still `pending` are kept too.
   */
  save(delivery: DeliveryRecord, keep: number): Promise<void>;
  get(id: string): Promise<DeliveryRecord | null>;
  /** The webhook's newest deliveries first, at most `limit`. */
  list(webhookId: string, limit: number): Promise<DeliveryRecord[]>;
}

/**
 * Attempt locks of webhook deliveries: at most one attempt of a delivery runs at a time,
 * store-wide, and only the holder records it. A lock not renewed within `ttlMs` is free again
 * (its holder died). Expiry is decided by one clock for all processes (the store's); the
 * embedded store (one process per data directory) may keep them in memory.
 */
export interface AttemptLockRepository {
  /** Take the lock for `holder`, or renew it if `holder` has it; false while another holds it. */
  acquire(deliveryId: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Free the lock if `holder` has it. Idempotent. */
  release(deliveryId: string, holder: string): Promise<void>;
}

/**
 * The exact bodies of webhook deliveries handed to the job scheduler for a retry, one per event
 * whatever the number of webhooks, so that retry jobs carry only the key. A body is kept at
 * least until its `keepUntilMs`, which each retry scheduled pushes later (never earlier); after
 * that the store removes it by itself (MongoDB: a TTL index; embedded: `removeExpired`, which
 * also spares a body an unfinished delivery job still names).
 */
export interface DeliveryBodyRepository {
  /** Keep `body` under `key` until at least `keepUntilMs`; a body kept already keeps its bytes. */
  keep(key: string, body: string, keepUntilMs: number): Promise<void>;
  /** The body kept under `key`, or null when there is none (any more). */
  get(key: string): Promise<string | null>;
  /** Remove bodies kept past their time; answers how many went. */
  removeExpired(nowMs: number): Promise<number>;
}

/**
 * A named reader of the change feed (the webhook dispatcher): one lease, so that one process at
 * a time reads for it, and the feed position it has handled, so a restart resumes there.
 * Lease times come from one clock for all processes (the store's), never from each process.
 */
export interface FeedConsumerRepository {
  /** Take the lease for `holder` for `ttlMs` if it is free or expired, or renew it if `holder` has it. True when `holder` holds it. */
  acquire(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Give the lease up if `holder` has it. */
  release(name: string, holder: string): Promise<void>;
  /** The position last saved under `name`, or null. */
  position(name: string): Promise<string | null>;
  /** Save the position, only while `holder` holds an unexpired lease; false otherwise. */
  savePosition(name: string, holder: string, position: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Declared indexes

/** One key of a declared index: a stored path and its direction. */
export interface IndexField {
  path: string;
  order: SortDirection;
}

export interface IndexDefinition {
  name: string;
  fields: IndexField[];
  unique: boolean;
}

export type IndexState = 'building' | 'ready' | 'failed';

export interface IndexRecord extends IndexDefinition {
  state: IndexState;
  createdAt: string;
  /** Why the build failed; for a unique index over duplicates, some of the duplicates' ids. */
  failure?: { message: string; ids: string[] };
}

export interface IndexRepository {
  /** The collection's declared indexes, by name. */
  list(scope: DataScope, collection: string): Promise<IndexRecord[]>;
  /**
   * Record the index as `building`, build it, and return it `ready`, or `failed` (kept, with the
   * reason) when the data forbids it (duplicates under a unique index). Null, creating nothing,
   * when the collection has `maxIndexes` indexes already: counting and creating are one step, so
   * racing creates never pass the maximum together (indexes still building count). Throws
   * DuplicateError('name') when the collection already has an index of that name.
   */
  create(
    scope: DataScope,
    collection: string,
    index: IndexDefinition,
    maxIndexes: number,
  ): Promise<IndexRecord | null>;
  /** Remove the index; false when there was none of that name. */
  drop(scope: DataScope, collection: string, name: string): Promise<boolean>;
  /**
   * Optional, for a store shared by several instances (MongoDB): add each entry's `queries` to
   * the shared count of queries on that field of the collection, and answer, per entry, the
   * count within the current window of `windowMs` and when any instance last queried it
   * (entries with 0 queries only read). Without it, automatic-index usage is per instance.
   */
  recordUsage?(entries: readonly IndexUsage[], windowMs: number): Promise<IndexUsageTotal[]>;
}

/** Queries on one top-level field of a collection (automatic indexes). */
export interface IndexUsage {
  scope: DataScope;
  collection: string;
  field: string;
  queries: number;
}

/** The shared usage of one field: queries in the current window, and the last query's time. */
export interface IndexUsageTotal extends IndexUsage {
  /** Epoch ms of the last query by any instance (0: never). */
  lastUsedMs: number;
}

/**
 * A write would give a unique index a value another document already holds; nothing was written.
 * `conflictingId` is that other document when the store could tell which.
 */
export class UniqueIndexConflictError extends Error {
  constructor(
    readonly index: string,
    readonly conflictingId: string | null,
  ) {
    super(`unique index '${index}' already holds this value`);
    this.name = 'UniqueIndexConflictError';
  }
}

/** What `DocumentRepository.explain` reports. */
export interface QueryPlan {
  /** The declared index the store searched, or null. */
  index: string | null;
  /** True when no index narrowed the documents read (the collection was walked, maybe stopping early). */
  scan: boolean;
  /** Documents the store read to answer. */
  documentsExamined: number;
  /** Documents answered (at most the page plus one). */
  returned: number;
  /** The store's own plan lines (SQLite's EXPLAIN QUERY PLAN, MongoDB's winning plan stages). */
  detail: string[];
}

// ---------------------------------------------------------------------------------------------
// Snapshots: every record of a store at one point in time, and written back into an empty one
// (`folio backup`, `folio restore`, `folio migrate`; the file format is in docs/operations.md).

/** Store-wide settings a snapshot carries: the key that seals webhook secrets, when the store made one. */
export type SnapshotSettingName = 'webhookSealingKey';

/**
 * One record of a snapshot, in the port's own shapes (no store layout), so a snapshot of either
 * store writes back into either. Left out, being tied to a running deployment rather than to
 * its data: sessions (users sign in again), webhook deliveries, change events and feed
 * positions, rate-limit counters, stream slots and background jobs.
 */
export type SnapshotRecord =
  | { type: 'setting'; name: SnapshotSettingName; value: string }
  | { type: 'account'; account: AccountRecord }
  | { type: 'project'; project: ProjectRecord }
  | { type: 'key'; key: ApiKeyRecord }
  | { type: 'webhook'; webhook: WebhookRecord }
  | { type: 'document'; scope: DataScope; collection: string; document: FolioDocument }
  | {
      type: 'version';
      scope: DataScope;
      collection: string;
      id: string;
      version: VersionInfo;
      /** The whole document at that version. */
      document: FolioDocument;
    }
  | { type: 'index'; scope: DataScope; collection: string; index: IndexRecord }
  | { type: 'schema'; scope: DataScope; collection: string; schema: CollectionSchemaRecord }
  /** A trash entry not expired at the read's start (expired ones are erased data: left out). */
  | { type: 'trashedDocument'; scope: DataScope; collection: string; entry: TrashEntry }
  /** One version of a trashed document's history; it comes after its `trashedDocument`. */
  | {
      type: 'trashedVersion';
      scope: DataScope;
      collection: string;
      id: string;
      version: VersionInfo;
      document: FolioDocument;
    };

export type SnapshotRecordType = SnapshotRecord['type'];

/**
 * A snapshot read could not stay at its point in time (MongoDB: a collection or index was
 * created under it, or the point left the server's history). `retryable`: a new read may succeed.
 * The message says what happened and what to do, in one line.
 */
export class SnapshotLostError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SnapshotLostError';
  }
}

export interface SnapshotRepository {
  /**
   * Every record of the store as it was at one point in time, while writers go on (embedded: one
   * read transaction on a connection of its own, which never blocks writers; MongoDB: a snapshot
   * session, see docs/operations.md). Order: settings, accounts, projects, keys, webhooks, schemas,
   * then per scope documents, versions, trashed documents each before its versions, and index
   * definitions. Leaving the loop early releases the snapshot.
   */
  read(): AsyncIterable<SnapshotRecord>;
  /** True when the store holds no account, project, key, webhook, document, version, index, schema or trash entry. */
  isEmpty(): Promise<boolean>;
  /**
   * Write the records exactly as given: no change events, no plan limits, no version numbering.
   * Each replaces the record of the same identity, so writing a batch twice (a resumed restore)
   * leaves what writing it once does. Index records are built over the documents already
   * written, so they come after them.
   */
  write(records: readonly SnapshotRecord[]): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Collection schemas

export type SchemaMode = 'enforce' | 'warn';

/** A collection's JSON Schema as its owner set it. The service checks it; the store keeps it. */
export interface CollectionSchemaRecord {
  /** The schema as JSON text, byte for byte as checked (its `$` keys are data, never operators). */
  schema: string;
  mode: SchemaMode;
  /** New on every put: what compiled validators are cached under. */
  revision: string;
  updatedAt: string;
}

export interface SchemaRepository {
  /** The collection's schema, or null. */
  get(scope: DataScope, collection: string): Promise<CollectionSchemaRecord | null>;
  /** Set (replace) the collection's schema. */
  put(scope: DataScope, collection: string, record: CollectionSchemaRecord): Promise<void>;
  /** Remove it; false when there was none. */
  delete(scope: DataScope, collection: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Trash: deleted documents with their history, until their `expiresAt` (see DeleteWrite).

export interface TrashEntry extends TrashStamp {
  id: string;
  /** The document's last version, as it was when deleted. */
  document: FolioDocument;
}

/** A place in the trash's order (newest deletion first, then id descending). */
export interface TrashPosition {
  deletedAt: string;
  id: string;
}

export interface TrashRepository {
  /**
   * Entries of the collection not expired at `now` (ISO), newest deletion first (ties: id
   * descending), strictly after `after` when given, at most `limit`.
   */
  list(
    scope: DataScope,
    collection: string,
    options: { limit: number; now: string; after?: TrashPosition | undefined },
  ): Promise<TrashEntry[]>;
  /** The entry, or null when there is none or it expired at `now` (an expired entry is gone to readers at once). */
  get(scope: DataScope, collection: string, id: string, now: string): Promise<TrashEntry | null>;
  /** The trashed document's history, newest first; empty when not in the trash (or expired at `now`). */
  listVersions(scope: DataScope, collection: string, id: string, now: string): Promise<VersionInfo[]>;
  /** Erase the entry and its history now; false when there was none. */
  purge(scope: DataScope, collection: string, id: string): Promise<boolean>;
  /**
   * Erase entries of every scope expired at `now`, at most `limit` of them; how many. A store may
   * also drop expired entries on its own (MongoDB's TTL index), never before `expiresAt`.
   */
  purgeExpired(now: string, limit: number): Promise<number>;
}
