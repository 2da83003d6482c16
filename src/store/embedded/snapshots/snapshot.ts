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
  DataScope,
  ProjectRecord,
  SnapshotRecord,
  SnapshotRepository,
  WebhookRecord,
  WriteOperation,
} from '../../port.js';
import { rulesText } from '../accounts/accounts.js';
import { storedBodySql } from '../documents/apiText.js';
import type { EmbeddedIndexes } from '../indexes/declaredIndexes.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { SEALING_KEY_FILE } from '../webhooks/webhooks.js';
import { accountRecords, tableRecords } from './snapshotRows.js';

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
  key: Database.Statement<Omit<ApiKeyRecord, 'config' | 'rules'> & { config: string; rules: string | null }>;
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
          'created_at, last_used_at, revoked_at, rotated_from, rules) VALUES (@id, @projectId, @name, @env, @scope, ' +
          '@config, @status, @keyHash, @hint, @createdAt, @lastUsedAt, @revokedAt, @rotatedFrom, @rules)',
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
      const accounts = accountRecords(reader);
      const key = this.#sealingKey();
      if (key !== null) yield { type: 'setting', name: 'webhookSealingKey', value: key };
      yield* accounts;
      let sinceYield = 0;
      for (const record of tableRecords(reader, now)) {
        yield record;
        if (++sinceYield < YIELD_EVERY) continue;
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
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
      case 'project':
        s.project.run(projectRow(record.project));
        return;
      case 'key':
        // `rules` is absent in backups written before keys had rules: unrestricted.
        s.key.run({
          ...record.key,
          config: JSON.stringify(record.key.config),
          rules: rulesText(record.key.rules ?? null),
        });
        return;
      case 'webhook':
        s.webhook.run(webhookRow(record.webhook));
        return;
      case 'document': {
        const doc = record.document;
        const { $version: version, $createdAt: createdAt, $updatedAt: updatedAt } = doc;
        const json = JSON.stringify(doc);
        s.document.run({ ...keyOf(record), id: doc._id, version, createdAt, updatedAt, json });
        return;
      }
      case 'version':
        s.version.run(versionRow(record));
        return;
      case 'schema':
        s.schema.run({ ...keyOf(record), ...record.schema });
        return;
      case 'trashedDocument': {
        const { document, ...stamp } = record.entry;
        s.trashed.run({
          ...keyOf(record),
          ...stamp,
          version: document.$version,
          body: JSON.stringify(document),
        });
        return;
      }
      case 'trashedVersion':
        s.trashedVersion.run(versionRow(record));
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

/** The row key of a record of one collection. */
function keyOf(record: { scope: DataScope; collection: string }): { scope: string; collection: string } {
  return { scope: scopeKeyOf(record.scope), collection: record.collection };
}

function projectRow(p: ProjectRecord) {
  return {
    id: p.id,
    accountId: p.accountId,
    name: p.name,
    createdAt: p.createdAt,
    allowedOrigins: p.allowedOrigins === null ? null : JSON.stringify(p.allowedOrigins),
    autoIndexes: p.autoIndexes == null ? null : p.autoIndexes ? 1 : 0,
  };
}

function webhookRow({ scope, events, ...rest }: WebhookRecord) {
  return {
    ...rest,
    scope: scopeKeyOf(scope),
    projectId: scope.projectId,
    env: scope.env,
    events: JSON.stringify(events),
  };
}

/** A `version` or `trashedVersion` record as its table's row. */
function versionRow(record: Extract<SnapshotRecord, { type: 'version' | 'trashedVersion' }>): VersionRow {
  return { ...keyOf(record), id: record.id, ...record.version, body: JSON.stringify(record.document) };
}
