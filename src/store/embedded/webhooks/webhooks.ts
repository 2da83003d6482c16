/** Webhooks on SQLite; the tables are migration 4 in `schema.ts`. */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import {
  type DataScope,
  DuplicateError,
  type Env,
  type WebhookChanges,
  type WebhookRecord,
  type WebhookRepository,
  type WebhookStatus,
} from '../../port.js';
import { feedKey } from '../changes/changeLog.js';
import { scopeKeyOf } from '../layout/scopeKey.js';

/**
 * Collections known to have no webhook, so the dispatcher's look-up per change costs a Set
 * probe. Only `create` can add a webhook, and this process is the data directory's only writer
 * of webhooks (the lock keeps other servers out; operator commands write accounts and keys), so
 * dropping the key there keeps the set true. Bounded: least recently used out first past this size.
 */
const NONE_MAX_ENTRIES = 10_000;

export interface WebhookRow {
  id: string;
  scope: string;
  project_id: string;
  env: Env;
  collection: string;
  url: string;
  events: string;
  description: string;
  status: WebhookStatus;
  sealed_secret: string;
  consecutive_failures: number;
  created_at: string;
  updated_at: string;
}

/** A `webhooks` row as the port's record (also read by snapshot.ts). */
export function toRecord(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    scope: { projectId: row.project_id, env: row.env },
    collection: row.collection,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    description: row.description,
    status: row.status,
    sealedSecret: row.sealed_secret,
    consecutiveFailures: row.consecutive_failures,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function toRow(webhook: WebhookRecord): WebhookRow {
  return {
    id: webhook.id,
    scope: scopeKeyOf(webhook.scope),
    project_id: webhook.scope.projectId,
    env: webhook.scope.env,
    collection: webhook.collection,
    url: webhook.url,
    events: JSON.stringify(webhook.events),
    description: webhook.description,
    status: webhook.status,
    sealed_secret: webhook.sealedSecret,
    consecutive_failures: webhook.consecutiveFailures,
    created_at: webhook.createdAt,
    updated_at: webhook.updatedAt,
  };
}

const COLUMNS = [
  'id',
  'scope',
  'project_id',
  'env',
  'collection',
  'url',
  'events',
  'description',
  'status',
  'sealed_secret',
  'consecutive_failures',
  'created_at',
  'updated_at',
] as const;

/** Where the sealing key lives: beside the database, so a copy of the database alone holds no usable secret. */
export const SEALING_KEY_FILE = 'webhook-sealing.key';

export class EmbeddedWebhooks implements WebhookRepository {
  readonly #insert: Database.Statement<WebhookRow & { max: number }>;
  readonly #get: Database.Statement<[string, string, string], WebhookRow>;
  readonly #list: Database.Statement<[string, string], WebhookRow>;
  readonly #count: Database.Statement<[string, string], { n: number }>;
  readonly #replace: Database.Statement<WebhookRow>;
  readonly #delete: Database.Statement<[string, string, string]>;
  readonly #deleteDeliveries: Database.Statement<[string]>;
  readonly #success: Database.Statement<[string]>;
  readonly #failure: Database.Statement<{ disableAt: number; at: string; id: string }, WebhookRow>;
  readonly #updateTx: (
    scope: DataScope,
    collection: string,
    id: string,
    changes: WebhookChanges,
  ) => WebhookRow | null;
  readonly #deleteTx: (scope: DataScope, collection: string, id: string) => boolean;
  /** Fan-out keys of collections whose last look-up found no webhook (see NONE_MAX_ENTRIES). */
  readonly #none = new LRUCache<string, true>({ max: NONE_MAX_ENTRIES });

  constructor(
    db: Database.Database,
    private readonly dataDir: string,
  ) {
    // One statement counts and inserts, so concurrent creates cannot pass the count together.
    this.#insert = db.prepare(
      `INSERT INTO webhooks (${COLUMNS.join(', ')}) SELECT ${COLUMNS.map((c) => `@${c}`).join(', ')}
       WHERE (SELECT count(*) FROM webhooks WHERE scope = @scope AND collection = @collection) < @max`,
    );
    this.#get = db.prepare('SELECT * FROM webhooks WHERE scope = ? AND collection = ? AND id = ?');
    this.#list = db.prepare(
      'SELECT * FROM webhooks WHERE scope = ? AND collection = ? ORDER BY created_at, id',
    );
    this.#count = db.prepare('SELECT count(*) AS n FROM webhooks WHERE scope = ? AND collection = ?');
    this.#replace = db.prepare(
      `UPDATE webhooks SET ${COLUMNS.filter((c) => c !== 'id')
        .map((c) => `${c} = @${c}`)
        .join(', ')} WHERE id = @id`,
    );
    this.#delete = db.prepare('DELETE FROM webhooks WHERE scope = ? AND collection = ? AND id = ?');
    this.#deleteDeliveries = db.prepare('DELETE FROM webhook_deliveries WHERE webhook_id = ?');
    this.#success = db.prepare(
      'UPDATE webhooks SET consecutive_failures = 0 WHERE id = ? AND consecutive_failures <> 0',
    );
    // One statement: the increment and the disabling decision cannot interleave with another.
    this.#failure = db.prepare(
      `UPDATE webhooks SET consecutive_failures = consecutive_failures + 1,
         status = CASE WHEN consecutive_failures + 1 >= @disableAt THEN 'disabled' ELSE status END,
         updated_at = CASE WHEN consecutive_failures + 1 >= @disableAt AND status <> 'disabled' THEN @at
           ELSE updated_at END
       WHERE id = @id RETURNING *`,
    );
    this.#updateTx = db.transaction((scope, collection, id, changes) => {
      const row = this.#get.get(scopeKeyOf(scope), collection, id);
      if (!row) return null;
      const next = toRow({ ...toRecord(row), ...changes });
      this.#replace.run(next);
      return next;
    });
    this.#deleteTx = db.transaction((scope, collection, id) => {
      const deleted = this.#delete.run(scopeKeyOf(scope), collection, id).changes === 1;
      if (deleted) this.#deleteDeliveries.run(id);
      return deleted;
    });
  }

  async create(webhook: WebhookRecord, maxPerCollection: number): Promise<boolean> {
    // Before the insert: a listActive between the two then reads the table again.
    this.#none.delete(feedKey(scopeKeyOf(webhook.scope), webhook.collection));
    try {
      return this.#insert.run({ ...toRow(webhook), max: maxPerCollection }).changes === 1;
    } catch (error) {
      if (error instanceof Database.SqliteError && error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
        throw new DuplicateError('id');
      }
      throw error;
    }
  }

  async get(scope: DataScope, collection: string, id: string): Promise<WebhookRecord | null> {
    const row = this.#get.get(scopeKeyOf(scope), collection, id);
    return row ? toRecord(row) : null;
  }

  async list(scope: DataScope, collection: string): Promise<WebhookRecord[]> {
    return this.#list.all(scopeKeyOf(scope), collection).map(toRecord);
  }

  async count(scope: DataScope, collection: string): Promise<number> {
    return this.#count.get(scopeKeyOf(scope), collection)?.n ?? 0;
  }

  async listActive(scope: DataScope, collection: string, event: string): Promise<WebhookRecord[]> {
    // The dispatcher asks for every change; most collections have no webhook at all.
    const scopeKey = scopeKeyOf(scope);
    const key = feedKey(scopeKey, collection);
    if (this.#none.has(key)) return [];
    const all = this.#list.all(scopeKey, collection);
    if (all.length === 0) {
      this.#none.set(key, true);
      return [];
    }
    // A collection has a handful of webhooks (a plan limit): filter them here.
    return all.map(toRecord).filter((w) => w.status === 'active' && w.events.includes(event));
  }

  async update(
    scope: DataScope,
    collection: string,
    id: string,
    changes: WebhookChanges,
  ): Promise<WebhookRecord | null> {
    const row = this.#updateTx(scope, collection, id, changes);
    return row ? toRecord(row) : null;
  }

  async delete(scope: DataScope, collection: string, id: string): Promise<boolean> {
    return this.#deleteTx(scope, collection, id);
  }

  async recordSuccess(id: string): Promise<void> {
    this.#success.run(id);
  }

  async recordFailure(id: string, disableAt: number, at: string): Promise<WebhookRecord | null> {
    const row = this.#failure.get({ disableAt, at, id });
    return row ? toRecord(row) : null;
  }

  async sealingKey(generate: () => Buffer): Promise<Buffer> {
    const file = path.join(this.dataDir, SEALING_KEY_FILE);
    if (!existsSync(file)) {
      // `wx`: if another opener raced us, its key stands and we read it below.
      try {
        writeFileSync(file, generate().toString('base64'), { flag: 'wx', mode: 0o600 });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      chmodSync(file, 0o600);
    }
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  }
}
