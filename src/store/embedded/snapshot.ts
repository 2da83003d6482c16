/**
 * Snapshots of the embedded store (the port's SnapshotRepository).
 *
 * Reading: one read transaction on a read-only connection of its own. In WAL mode the
 * transaction sees the database as it was at its first read, whatever commits after, and never
 * blocks the server's writers (it only keeps the WAL from being checkpointed past that point
 * until it ends). better-sqlite3 runs one statement at a time per connection, so the tables are
 * walked one after the other, each in a fixed order.
 *
 * Writing: rows as given, `INSERT OR REPLACE` (a batch written twice is written once), in one
 * transaction per batch; no change-log row, so nothing is announced to subscribers or webhooks.
 * Index declarations are built afterwards by EmbeddedIndexes, over the documents written.
 *
 * Trash entries already past their `expires_at` when the read starts are left out with their
 * history: they are erased data to every reader, waiting only for the sweep to free the bytes,
 * and a backup file outlives any sweep.
 */

import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type {
  AccountRecord,
  ApiKeyRecord,
  FolioDocument,
  IndexRecord,
  JsonObject,
  ProjectRecord,
  SchemaMode,
  SnapshotRecord,
  SnapshotRepository,
  WebhookRecord,
  WriteOperation,
} from '../port.js';
import { API_TEXT, storedBodySql } from './apiText.js';
import { CURRENT_VERSION_ROW, HOLDS_CURRENT_VERSION } from './currentVersion.js';
import type { EmbeddedIndexes } from './declaredIndexes.js';
import { scopeFromKey, scopeKeyOf } from './scopeKey.js';
import { SEALING_KEY_FILE, type WebhookRow, toRecord as webhookRecordOf } from './webhooks.js';

/** How long the snapshot's first read waits for a connection recovering the WAL. */
const READER_BUSY_TIMEOUT_MS = 5000;
/** Rows handed out between two turns of the event loop. */
const YIELD_EVERY = 256;

/**
 * The same body as `EmbeddedDocuments`' upsert writes: the API text as JSONB (apiText.ts). No
 * operation: the restored versions include each document's current one, as before schema 9
 * (currentVersion.ts); the next start moves the rows to the new layout (historyLayout.ts).
 */
const UPSERT_DOCUMENT_SQL =
  'INSERT OR REPLACE INTO documents (scope, collection, id, version, created_at, updated_at, api_form, body) ' +
  `VALUES (@scope, @collection, @id, @version, @createdAt, @updatedAt, 1, ${storedBodySql('@json', '@createdAt', '@updatedAt', '@version')})`;

interface Statements {
  account: Database.Statement<AccountRecord & { emailKey: string }>;
  project: Database.Statement<{
    id: string;
    accountId: string;
    name: string;
    createdAt: string;
    allowedOrigins: string | null;
    autoIndexes: number | null;
  }>;
  key: Database.Statement<Omit<ApiKeyRecord, 'config'> & { config: string }>;
  webhook: Database.Statement<
    Omit<WebhookRecord, 'scope' | 'events'> & {
      scope: string;
      projectId: string;
      env: string;
      events: string;
    }
  >;
  document: Database.Statement<{
    scope: string;
    collection: string;
    id: string;
    version: number;
    createdAt: string;
    updatedAt: string;
    json: string;
  }>;
  version: Database.Statement<VersionRow>;
  schema: Database.Statement<{
    scope: string;
    collection: string;
    schema: string;
    mode: string;
    revision: string;
    updatedAt: string;
  }>;
  trashed: Database.Statement<{
    scope: string;
    collection: string;
    id: string;
    version: number;
    deletedAt: string;
    apiKeyHint: string;
    expiresAt: string;
    body: string;
  }>;
  trashedVersion: Database.Statement<VersionRow>;
}

interface VersionRow {
  scope: string;
  collection: string;
  id: string;
  version: number;
  operation: WriteOperation;
  timestamp: string;
  apiKeyHint: string;
  body: string;
}

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

export class EmbeddedSnapshots implements SnapshotRepository {
  readonly #statements: Statements;
  readonly #writeTx: (records: readonly SnapshotRecord[]) => void;

  constructor(
    private readonly db: Database.Database,
    private readonly dataDir: string,
    private readonly indexes: EmbeddedIndexes,
  ) {
    this.#statements = {
      account: db.prepare(
        'INSERT OR REPLACE INTO accounts (id, email, email_key, password_hash, plan, created_at) ' +
          'VALUES (@id, @email, @emailKey, @passwordHash, @plan, @createdAt)',
      ),
      project: db.prepare(
        'INSERT OR REPLACE INTO projects (id, account_id, name, created_at, allowed_origins, auto_indexes) ' +
          'VALUES (@id, @accountId, @name, @createdAt, @allowedOrigins, @autoIndexes)',
      ),
      key: db.prepare(
        'INSERT OR REPLACE INTO api_keys (id, project_id, name, env, scope, config, status, key_hash, hint, ' +
          'created_at, last_used_at, revoked_at, rotated_from) VALUES (@id, @projectId, @name, @env, @scope, ' +
          '@config, @status, @keyHash, @hint, @createdAt, @lastUsedAt, @revokedAt, @rotatedFrom)',
      ),
      webhook: db.prepare(
        'INSERT OR REPLACE INTO webhooks (id, scope, project_id, env, collection, url, events, description, ' +
          'status, sealed_secret, consecutive_failures, created_at, updated_at) VALUES (@id, @scope, @projectId, ' +
          '@env, @collection, @url, @events, @description, @status, @sealedSecret, @consecutiveFailures, ' +
          '@createdAt, @updatedAt)',
      ),
      document: db.prepare(UPSERT_DOCUMENT_SQL),
      version: db.prepare(
        'INSERT OR REPLACE INTO versions (scope, collection, doc_id, version, operation, timestamp, ' +
          'api_key_hint, body) VALUES (@scope, @collection, @id, @version, @operation, @timestamp, @apiKeyHint, @body)',
      ),
      schema: db.prepare(
        'INSERT OR REPLACE INTO collection_schemas (scope, collection, schema, mode, revision, updated_at) ' +
          'VALUES (@scope, @collection, @schema, @mode, @revision, @updatedAt)',
      ),
      trashed: db.prepare(
        'INSERT OR REPLACE INTO trash (scope, collection, id, version, deleted_at, api_key_hint, expires_at, body) ' +
          'VALUES (@scope, @collection, @id, @version, @deletedAt, @apiKeyHint, @expiresAt, @body)',
      ),
      trashedVersion: db.prepare(
        'INSERT OR REPLACE INTO trash_versions (scope, collection, doc_id, version, operation, timestamp, ' +
          'api_key_hint, body) VALUES (@scope, @collection, @id, @version, @operation, @timestamp, @apiKeyHint, @body)',
      ),
    };
    this.#writeTx = db.transaction((records: readonly SnapshotRecord[]) => {
      for (const record of records) this.#writeRow(record);
    });
  }

  async *read(): AsyncGenerator<SnapshotRecord> {
    const reader = new Database(this.db.name, {
      readonly: true,
      fileMustExist: true,
      timeout: READER_BUSY_TIMEOUT_MS,
    });
    try {
      // Trash entries expired by now are left out (see the header).
      const now = new Date().toISOString();
      reader.exec('BEGIN');
      // The first read fixes the snapshot; the sealing key (a file, written once) is read after it.
      const rows = reader.prepare('SELECT * FROM accounts ORDER BY id').all() as Array<
        Record<string, unknown>
      >;
      const key = this.#sealingKey();
      if (key !== null) yield { type: 'setting', name: 'webhookSealingKey', value: key };
      for (const r of rows) {
        yield {
          type: 'account',
          account: {
            id: r.id as string,
            email: r.email as string,
            passwordHash: r.password_hash as string,
            plan: r.plan as AccountRecord['plan'],
            createdAt: r.created_at as string,
          },
        };
      }
      let sinceYield = 0;
      const pace = async () => {
        if (++sinceYield < YIELD_EVERY) return;
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      };
      for (const r of reader.prepare('SELECT * FROM projects ORDER BY id').iterate() as Iterable<
        Record<string, unknown>
      >) {
        const project: ProjectRecord = {
          id: r.id as string,
          accountId: r.account_id as string,
          name: r.name as string,
          createdAt: r.created_at as string,
          allowedOrigins:
            r.allowed_origins === null ? null : (JSON.parse(r.allowed_origins as string) as string[]),
          ...(r.auto_indexes === null ? {} : { autoIndexes: r.auto_indexes === 1 }),
        };
        yield { type: 'project', project };
        await pace();
      }
      for (const r of reader.prepare('SELECT * FROM api_keys ORDER BY id').iterate() as Iterable<
        Record<string, unknown>
      >) {
        yield {
          type: 'key',
          key: {
            id: r.id as string,
            projectId: r.project_id as string,
            name: r.name as string,
            env: r.env as ApiKeyRecord['env'],
            scope: r.scope as ApiKeyRecord['scope'],
            config: JSON.parse(r.config as string) as JsonObject,
            status: r.status as ApiKeyRecord['status'],
            keyHash: r.key_hash as string,
            hint: r.hint as string,
            createdAt: r.created_at as string,
            lastUsedAt: r.last_used_at as string | null,
            revokedAt: r.revoked_at as string | null,
            rotatedFrom: r.rotated_from as string | null,
          },
        };
        await pace();
      }
      for (const row of reader
        .prepare('SELECT * FROM webhooks ORDER BY id')
        .iterate() as Iterable<WebhookRow>) {
        yield { type: 'webhook', webhook: webhookRecordOf(row) };
        await pace();
      }
      const schemas = reader
        .prepare<
          [],
          {
            scope: string;
            collection: string;
            schema: string;
            mode: SchemaMode;
            revision: string;
            updated_at: string;
          }
        >('SELECT * FROM collection_schemas ORDER BY scope, collection')
        .iterate();
      for (const r of schemas) {
        yield {
          type: 'schema',
          scope: scopeFromKey(r.scope),
          collection: r.collection,
          schema: { schema: r.schema, mode: r.mode, revision: r.revision, updatedAt: r.updated_at },
        };
        await pace();
      }
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
        await pace();
      }
      // Each document's history, its current version last: that one is its `documents` row's
      // where the row holds it (currentVersion.ts). Both sides come in key order, so SQLite
      // merges them without sorting.
      const versions = reader.prepare<[], VersionTableRow>(
        'SELECT scope, collection, doc_id, version, operation, timestamp, api_key_hint, body FROM versions ' +
          `UNION ALL SELECT ${CURRENT_VERSION_ROW} FROM documents WHERE ${HOLDS_CURRENT_VERSION} ORDER BY 1, 2, 3, 4`,
      );
      for (const r of versions.iterate()) {
        yield { type: 'version', ...versionOf(r) };
        await pace();
      }
      // Each live entry, then its history: one statement, as one connection runs one at a time.
      // `kind` 0 is the entry (its columns in the version row's places), 1 a version of it.
      const trash = reader.prepare<
        [string, string],
        VersionTableRow & { kind: number; deleted_at: string; expires_at: string }
      >(
        'SELECT 0 AS kind, scope, collection, id AS doc_id, version, NULL AS operation, NULL AS timestamp, ' +
          'api_key_hint, body, deleted_at, expires_at FROM trash WHERE expires_at > ? ' +
          'UNION ALL SELECT 1, v.scope, v.collection, v.doc_id, v.version, v.operation, v.timestamp, ' +
          'v.api_key_hint, v.body, NULL, NULL FROM trash_versions v JOIN trash t ON t.scope = v.scope ' +
          'AND t.collection = v.collection AND t.id = v.doc_id WHERE t.expires_at > ? ' +
          'ORDER BY 2, 3, 4, 1, 5',
      );
      for (const r of trash.iterate(now, now)) {
        if (r.kind === 0) {
          yield {
            type: 'trashedDocument',
            scope: scopeFromKey(r.scope),
            collection: r.collection,
            entry: {
              id: r.doc_id,
              deletedAt: r.deleted_at,
              apiKeyHint: r.api_key_hint,
              expiresAt: r.expires_at,
              document: JSON.parse(r.body),
            },
          };
        } else {
          yield { type: 'trashedVersion', ...versionOf(r) };
        }
        await pace();
      }
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
      reader.exec('COMMIT');
    } finally {
      reader.close();
    }
  }

  async isEmpty(): Promise<boolean> {
    const tables = [
      'accounts',
      'projects',
      'api_keys',
      'webhooks',
      'documents',
      'versions',
      'declared_indexes',
      'collection_schemas',
      'trash',
      'trash_versions',
    ];
    const sql = `SELECT ${tables.map((t) => `EXISTS (SELECT 1 FROM ${t})`).join(' OR ')} AS any_row`;
    return (this.db.prepare(sql).get() as { any_row: number }).any_row === 0;
  }

  async write(records: readonly SnapshotRecord[]): Promise<void> {
    const rows = records.filter((r) => r.type !== 'index' && r.type !== 'setting');
    if (rows.length > 0) this.#writeTx(rows);
    for (const record of records) {
      if (record.type === 'setting') this.#writeSetting(record.value);
      else if (record.type === 'index')
        await this.indexes.restore(record.scope, record.collection, record.index);
    }
  }

  #writeRow(record: SnapshotRecord): void {
    const s = this.#statements;
    switch (record.type) {
      case 'account':
        s.account.run({ ...record.account, emailKey: record.account.email.toLowerCase() });
        return;
      case 'project': {
        const p = record.project;
        s.project.run({
          id: p.id,
          accountId: p.accountId,
          name: p.name,
          createdAt: p.createdAt,
          allowedOrigins: p.allowedOrigins === null ? null : JSON.stringify(p.allowedOrigins),
          autoIndexes: p.autoIndexes == null ? null : p.autoIndexes ? 1 : 0,
        });
        return;
      }
      case 'key':
        s.key.run({ ...record.key, config: JSON.stringify(record.key.config) });
        return;
      case 'webhook': {
        const { scope, events, ...rest } = record.webhook;
        s.webhook.run({
          ...rest,
          scope: scopeKeyOf(scope),
          projectId: scope.projectId,
          env: scope.env,
          events: JSON.stringify(events),
        });
        return;
      }
      case 'document': {
        const doc = record.document;
        s.document.run({
          scope: scopeKeyOf(record.scope),
          collection: record.collection,
          id: doc._id,
          version: doc.$version,
          createdAt: doc.$createdAt,
          updatedAt: doc.$updatedAt,
          json: JSON.stringify(doc),
        });
        return;
      }
      case 'version':
        s.version.run({
          scope: scopeKeyOf(record.scope),
          collection: record.collection,
          id: record.id,
          ...record.version,
          body: JSON.stringify(record.document),
        });
        return;
      case 'schema':
        s.schema.run({
          scope: scopeKeyOf(record.scope),
          collection: record.collection,
          ...record.schema,
        });
        return;
      case 'trashedDocument': {
        const { entry } = record;
        s.trashed.run({
          scope: scopeKeyOf(record.scope),
          collection: record.collection,
          id: entry.id,
          version: entry.document.$version,
          deletedAt: entry.deletedAt,
          apiKeyHint: entry.apiKeyHint,
          expiresAt: entry.expiresAt,
          body: JSON.stringify(entry.document),
        });
        return;
      }
      case 'trashedVersion':
        s.trashedVersion.run({
          scope: scopeKeyOf(record.scope),
          collection: record.collection,
          id: record.id,
          ...record.version,
          body: JSON.stringify(record.document),
        });
        return;
      default:
        throw new Error(`embedded snapshot: cannot write a ${record.type} record as a row`);
    }
  }

  /** The sealing key as the file holds it (base64), or null when the store never made one. */
  #sealingKey(): string | null {
    const file = path.join(this.dataDir, SEALING_KEY_FILE);
    return existsSync(file) ? readFileSync(file, 'utf8').trim() : null;
  }

  #writeSetting(value: string): void {
    const file = path.join(this.dataDir, SEALING_KEY_FILE);
    writeFileSync(file, value, { mode: 0o600 });
    chmodSync(file, 0o600);
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
