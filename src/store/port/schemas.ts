/** Collection schemas. */
import type { DataScope } from './documents.js';

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
