/** Declared indexes, their usage, and query plans. */
import type { DataScope, SortDirection } from './documents.js';

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
