/**
 * Collection schemas on MongoDB: one record per collection in the system database. The schema
 * is kept as JSON text: its keys (`$ref`, `$defs`, `$schema`) are data, and MongoDB would read
 * field names starting with `$` as operators in some places.
 */
import type { Collection, Db } from 'mongodb';
import type { CollectionSchemaRecord, DataScope, SchemaMode, SchemaRepository } from '../../port.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';

export interface SchemaDoc {
  _id: string;
  schema: string;
  mode: SchemaMode;
  revision: string;
  updatedAt: string;
}

/** One `_id` per scope and collection; JSON so no separator can be forged by a name. */
export function schemaRecordId(scope: DataScope, collection: string): string {
  return JSON.stringify([scope.projectId, scope.env, collection]);
}

/** The scope and collection a `schemaRecordId` names (snapshots read them back). */
export function schemaRecordPlace(id: string): { scope: DataScope; collection: string } {
  const [projectId, env, collection] = JSON.parse(id) as [string, DataScope['env'], string];
  return { scope: { projectId, env }, collection };
}

export class MongoSchemas implements SchemaRepository {
  readonly #records: Collection<SchemaDoc>;

  constructor(system: Db) {
    this.#records = system.collection<SchemaDoc>(SYSTEM_COLLECTIONS.collectionSchemas);
  }

  async get(scope: DataScope, collection: string): Promise<CollectionSchemaRecord | null> {
    const doc = await this.#records.findOne({ _id: schemaRecordId(scope, collection) });
    return doc
      ? { schema: doc.schema, mode: doc.mode, revision: doc.revision, updatedAt: doc.updatedAt }
      : null;
  }

  async put(scope: DataScope, collection: string, record: CollectionSchemaRecord): Promise<void> {
    const { schema, mode, revision, updatedAt } = record;
    await this.#records.replaceOne(
      { _id: schemaRecordId(scope, collection) },
      { schema, mode, revision, updatedAt },
      { upsert: true },
    );
  }

  async delete(scope: DataScope, collection: string): Promise<boolean> {
    const result = await this.#records.deleteOne({ _id: schemaRecordId(scope, collection) });
    return result.deletedCount > 0;
  }
}
