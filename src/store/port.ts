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
}

/** Remove the document and its whole history. */
export interface DeleteWrite {
  kind: 'delete';
  id: string;
  /** The `$version` the writer read; the delete happens only if it is still current. */
  expectedVersion: number;
}

export type DocumentWrite = PutWrite | DeleteWrite;

export interface WriteConflict {
  id: string;
  /** The document's current `$version`, or null when it does not exist. */
  currentVersion: number | null;
}

export type CommitResult = { ok: true } | { ok: false; conflicts: WriteConflict[] };

/** Ascending (1) or descending (-1), MongoDB-style. */
export type SortDirection = 1 | -1;

/**
 * A query in canonical form. `filter` is a MongoDB filter document over the *stored* form of
 * documents (see `storedForm.ts`), restricted to what `src/query/` generates: `$and`, `$in`,
 * `$nin`, `$gt`, `$gte`, `$lt`, `$lte`, `$regex` with `$options: 'i'`, `$exists`.
 */
export interface FindQuery {
  filter: StoredFilter;
  /** Sort keys in order, over stored paths; the service always ends it with `_id`. */
  sort: Array<[path: string, direction: SortDirection]>;
  skip: number;
  limit: number;
  /** Stored paths to include (MongoDB inclusion projection); `_id` is always included. */
  projection?: string[] | undefined;
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
  commit(scope: DataScope, collection: string, writes: DocumentWrite[]): Promise<CommitResult>;
  /** Documents matching the query, in the query's order, projected. */
  find(scope: DataScope, collection: string, query: FindQuery): Promise<FolioDocument[]>;
  /** Number of documents matching the filter. */
  count(scope: DataScope, collection: string, filter: StoredFilter): Promise<number>;
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

/** One committed document change, in commit order within a collection. */
export interface ChangeEvent {
  /** Opaque, resumable position: pass it as `after` to continue just after this event. */
  token: string;
  type: ChangeType;
  collection: string;
  documentId: string;
  /** The document at that version; for `deleted`, the document as it was just before. */
  document: FolioDocument;
  /** ISO 8601 commit time. */
  timestamp: string;
}

/** Why a subscription ended without being closed by its owner. */
export type ChangeFeedEnd = 'history_lost' | 'invalidated' | 'store_closed';

export interface ChangeSubscription extends AsyncIterable<ChangeEvent> {
  /** Stop receiving; the iterator finishes. Idempotent. */
  close(): void;
  /** Set once the feed ended for a reason other than `close()`. */
  readonly endedBy: ChangeFeedEnd | null;
}

export interface ChangeFeed {
  /**
   * Committed changes of one collection, in commit order, from just after `after` (or from now).
   * Each store keeps one source per collection per process and fans it out to all
   * subscriptions. If `after` is older than the retained history, the subscription ends at once
   * with `endedBy = 'history_lost'`.
   */
  watch(scope: DataScope, collection: string, options?: { after?: string | undefined }): ChangeSubscription;
  /** Open sources in this process: one per watched collection, never one per subscriber. */
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

  createKey(key: ApiKeyRecord): Promise<void>;
  getKey(id: string): Promise<ApiKeyRecord | null>;
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
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

export interface CounterRepository {
  /**
   * Count one hit against `key` in a window that opens at the first hit and lasts `windowMs`.
   * Atomic: concurrent hits (from any number of processes sharing the store) are all counted.
   */
  hit(key: string, windowMs: number, nowMs: number): Promise<{ count: number; resetAtMs: number }>;
}

export interface Store {
  readonly kind: 'embedded' | 'mongodb';
  readonly documents: DocumentRepository;
  readonly changes: ChangeFeed;
  readonly accounts: AccountRepository;
  readonly counters: CounterRepository;
  /** Agenda's backend on this store's own connection, for background jobs. */
  agendaBackend(): AgendaBackend;
  /** Create schemas and indexes; verify the server is usable. Idempotent. */
  init(): Promise<void>;
  /** Resolves when the store answers a trivial request now; rejects otherwise (health checks). */
  ping(): Promise<void>;
  /** End subscriptions and release connections. */
  close(): Promise<void>;
}
