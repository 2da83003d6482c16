/**
 * The embedded store's tables as snapshot records, read on the snapshot's own connection inside
 * its read transaction (snapshot.ts): one table after the other, each in a fixed order, as
 * better-sqlite3 runs one statement at a time per connection.
 */
import type Database from 'better-sqlite3';
import type { FolioDocument, IndexRecord, SchemaMode, SnapshotRecord, WriteOperation } from '../../port.js';
import { trashEntryOf } from '../../trashEntry.js';
import {
  type AccountRow,
  type KeyRow,
  type ProjectRow,
  toAccount,
  toKey,
  toProject,
} from '../accounts/accounts.js';
import { API_TEXT } from '../documents/apiText.js';
import { CURRENT_VERSION_ROW, HOLDS_CURRENT_VERSION } from '../documents/currentVersion.js';
import { scopeFromKey } from '../layout/scopeKey.js';
import { type WebhookRow, toRecord as webhookRecordOf } from '../webhooks/webhooks.js';

/** A row of `versions` or `trash_versions` as SQLite gives it. */
interface VersionTableRow {
  scope: string;
  collection: string;
  doc_id: string;
  version: number;
  operation: WriteOperation;
  timestamp: string;
  api_key_hint: string;
  body: string;
}

/** The accounts, read at once: this is the read that fixes the snapshot. */
export function accountRecords(reader: Database.Database): SnapshotRecord[] {
  const rows = reader.prepare<[], AccountRow>('SELECT * FROM accounts ORDER BY id').all();
  return rows.map((r) => ({ type: 'account', account: toAccount(r) }));
}

/** Every table after the accounts, in the order a restore writes them; trash live at `now`. */
export function* tableRecords(reader: Database.Database, now: string): Generator<SnapshotRecord> {
  yield* projectRecords(reader);
  yield* keyRecords(reader);
  for (const row of reader.prepare('SELECT * FROM webhooks ORDER BY id').iterate() as Iterable<WebhookRow>) {
    yield { type: 'webhook', webhook: webhookRecordOf(row) };
  }
  yield* schemaRecords(reader);
  yield* documentRecords(reader);
  yield* versionRecords(reader);
  yield* trashRecords(reader, now);
  yield* indexRecords(reader);
}

function* projectRecords(reader: Database.Database): Generator<SnapshotRecord> {
  for (const r of reader.prepare<[], ProjectRow>('SELECT * FROM projects ORDER BY id').iterate()) {
    yield { type: 'project', project: toProject(r) };
  }
}

function* keyRecords(reader: Database.Database): Generator<SnapshotRecord> {
  for (const r of reader.prepare<[], KeyRow>('SELECT * FROM api_keys ORDER BY id').iterate()) {
    yield { type: 'key', key: toKey(r) };
  }
}

function* schemaRecords(reader: Database.Database): Generator<SnapshotRecord> {
  const schemas = reader.prepare<
    [],
    {
      scope: string;
      collection: string;
      schema: string;
      mode: SchemaMode;
      revision: string;
      updated_at: string;
    }
  >('SELECT * FROM collection_schemas ORDER BY scope, collection');
  for (const r of schemas.iterate()) {
    yield {
      type: 'schema',
      scope: scopeFromKey(r.scope),
      collection: r.collection,
      schema: { schema: r.schema, mode: r.mode, revision: r.revision, updatedAt: r.updated_at },
    };
  }
}

function* documentRecords(reader: Database.Database): Generator<SnapshotRecord> {
  const documents = reader.prepare<[], { scope: string; collection: string; json: string }>(
    `SELECT scope, collection, ${API_TEXT} AS json FROM documents ORDER BY scope, collection, id`,
  );
  for (const r of documents.iterate()) {
    yield {
      type: 'document',
      scope: scopeFromKey(r.scope),
      collection: r.collection,
      document: JSON.parse(r.json),
    };
  }
}

/**
 * Each document's history, its current version last: that one is its `documents` row's where
 * the row holds it (currentVersion.ts). Both sides come in key order, so SQLite merges them
 * without sorting.
 */
function* versionRecords(reader: Database.Database): Generator<SnapshotRecord> {
  const versions = reader.prepare<[], VersionTableRow>(
    'SELECT scope, collection, doc_id, version, operation, timestamp, api_key_hint, body FROM versions ' +
      `UNION ALL SELECT ${CURRENT_VERSION_ROW} FROM documents WHERE ${HOLDS_CURRENT_VERSION} ORDER BY 1, 2, 3, 4`,
  );
  for (const r of versions.iterate()) yield { type: 'version', ...versionOf(r) };
}

/**
 * Each entry live at `now`, then its history: one statement, as one connection runs one at a
 * time. `kind` 0 is the entry (its columns in the version row's places), 1 a version of it.
 */
function* trashRecords(reader: Database.Database, now: string): Generator<SnapshotRecord> {
  const trash = reader.prepare<
    [string, string],
    VersionTableRow & { kind: number; deletedAt: string; expiresAt: string }
  >(
    'SELECT 0 AS kind, scope, collection, id AS doc_id, version, NULL AS operation, NULL AS timestamp, ' +
      'api_key_hint, body, deleted_at AS deletedAt, expires_at AS expiresAt FROM trash WHERE expires_at > ? ' +
      'UNION ALL SELECT 1, v.scope, v.collection, v.doc_id, v.version, v.operation, v.timestamp, ' +
      'v.api_key_hint, v.body, NULL, NULL FROM trash_versions v JOIN trash t ON t.scope = v.scope ' +
      'AND t.collection = v.collection AND t.id = v.doc_id WHERE t.expires_at > ? ' +
      'ORDER BY 2, 3, 4, 1, 5',
  );
  for (const r of trash.iterate(now, now)) {
    if (r.kind === 0) {
      const stamp = { deletedAt: r.deletedAt, apiKeyHint: r.api_key_hint, expiresAt: r.expiresAt };
      const entry = trashEntryOf(r.doc_id, stamp, JSON.parse(r.body) as FolioDocument);
      yield { type: 'trashedDocument', scope: scopeFromKey(r.scope), collection: r.collection, entry };
    } else {
      yield { type: 'trashedVersion', ...versionOf(r) };
    }
  }
}

function* indexRecords(reader: Database.Database): Generator<SnapshotRecord> {
  const indexes = reader
    .prepare<
      [],
      {
        scope: string;
        collection: string;
        name: string;
        definition: string;
        state: IndexRecord['state'];
        failure: string | null;
        created_at: string;
      }
    >('SELECT * FROM declared_indexes ORDER BY scope, collection, created_at, name')
    .all();
  for (const r of indexes) {
    const definition = JSON.parse(r.definition) as Pick<IndexRecord, 'fields' | 'unique'>;
    yield {
      type: 'index',
      scope: scopeFromKey(r.scope),
      collection: r.collection,
      index: {
        name: r.name,
        fields: definition.fields,
        unique: definition.unique,
        state: r.state,
        createdAt: r.created_at,
        ...(r.failure ? { failure: JSON.parse(r.failure) as NonNullable<IndexRecord['failure']> } : {}),
      },
    };
  }
}

/** A row of `versions` or `trash_versions` as the port's record fields. */
function versionOf(r: VersionTableRow) {
  return {
    scope: scopeFromKey(r.scope),
    collection: r.collection,
    id: r.doc_id,
    version: {
      version: r.version,
      operation: r.operation,
      timestamp: r.timestamp,
      apiKeyHint: r.api_key_hint,
    },
    document: JSON.parse(r.body) as FolioDocument,
  };
}
