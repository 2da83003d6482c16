/** Documents: the JSON shapes, data scopes, writes and the document repository. */

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
