/** Collection schemas on SQLite: one row per collection, the schema kept as the text given. */
import type Database from 'better-sqlite3';
import type { CollectionSchemaRecord, DataScope, SchemaMode, SchemaRepository } from '../../port.js';
import { scopeKeyOf } from '../layout/scopeKey.js';

interface Row {
  schema: string;
  mode: SchemaMode;
  revision: string;
  updated_at: string;
}

export class EmbeddedSchemas implements SchemaRepository {
  readonly #get: Database.Statement<[string, string], Row>;
  readonly #put: Database.Statement<[string, string, string, SchemaMode, string, string]>;
  readonly #delete: Database.Statement<[string, string]>;

  constructor(db: Database.Database) {
    this.#get = db.prepare(
      'SELECT schema, mode, revision, updated_at FROM collection_schemas WHERE scope = ? AND collection = ?',
    );
    this.#put = db.prepare(
      'INSERT INTO collection_schemas (scope, collection, schema, mode, revision, updated_at) ' +
        'VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, collection) DO UPDATE SET ' +
        'schema = excluded.schema, mode = excluded.mode, revision = excluded.revision, updated_at = excluded.updated_at',
    );
    this.#delete = db.prepare('DELETE FROM collection_schemas WHERE scope = ? AND collection = ?');
  }

  async get(scope: DataScope, collection: string): Promise<CollectionSchemaRecord | null> {
    const row = this.#get.get(scopeKeyOf(scope), collection);
    return row
      ? { schema: row.schema, mode: row.mode, revision: row.revision, updatedAt: row.updated_at }
      : null;
  }

  async put(scope: DataScope, collection: string, record: CollectionSchemaRecord): Promise<void> {
    this.#put.run(
      scopeKeyOf(scope),
      collection,
      record.schema,
      record.mode,
      record.revision,
      record.updatedAt,
    );
  }

  async delete(scope: DataScope, collection: string): Promise<boolean> {
    return this.#delete.run(scopeKeyOf(scope), collection).changes > 0;
  }
}
