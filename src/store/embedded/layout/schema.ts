/**
 * The embedded store's schema, as an ordered list of migrations. `PRAGMA user_version` records
 * how many have been applied, so `applySchema` is idempotent and an older data directory is
 * upgraded in place. Migrations are append-only: never edit one that has shipped.
 *
 * The `documents` columns are a contract with the query compiler (`query/compileFilter.ts`,
 * `query/selectSql.ts`), which generates SQL against them under the alias `d`; `body` is the
 * stored form (`storedForm.ts`) as SQLite JSONB: the json functions read the binary form without
 * re-parsing text, which halves the cost of a filter over a whole collection.
 */
import type Database from 'better-sqlite3';

/** A table of versions (`versions`, and `trash_versions` for trashed documents): one row each. */
function historyTable(name: string): string {
  return `CREATE TABLE ${name} (
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    operation TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    api_key_hint TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (scope, collection, doc_id, version)
  );`;
}

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE documents (
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (scope, collection, id)
  );
  CREATE INDEX documents_created ON documents (scope, collection, created_at, id);
  CREATE INDEX documents_updated ON documents (scope, collection, updated_at, id);
  CREATE INDEX documents_version ON documents (scope, collection, version, id);

  ${historyTable('versions')}

  -- The outbox: one row per committed write, in the write's transaction. AUTOINCREMENT keeps
  -- seq values from being reused after pruning, so a token always names one event.
  CREATE TABLE changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    type TEXT NOT NULL,
    doc_id TEXT NOT NULL,
    document TEXT NOT NULL,
    timestamp TEXT NOT NULL
  );
  CREATE INDEX changes_replay ON changes (scope, collection, seq);
  CREATE INDEX changes_timestamp ON changes (timestamp);

  CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    email_key TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    plan TEXT NOT NULL,
    created_at TEXT NOT NULL
  );

  CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
  );
  CREATE INDEX sessions_expires ON sessions (expires_at);

  CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    name TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (account_id, name)
  );

  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL,
    name TEXT NOT NULL,
    env TEXT NOT NULL,
    scope TEXT NOT NULL,
    config TEXT NOT NULL,
    status TEXT NOT NULL,
    key_hash TEXT NOT NULL UNIQUE,
    hint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT,
    rotated_from TEXT
  );
  CREATE INDEX api_keys_project ON api_keys (project_id, created_at);
  `,
  // 2: per-project CORS origins (JSON array text; NULL = default policy).
  `ALTER TABLE projects ADD COLUMN allowed_origins TEXT;`,
  // 3: indexes declared on collections (declaredIndexes.ts); definition is JSON text.
  `CREATE TABLE declared_indexes (
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    name TEXT NOT NULL,
    definition TEXT NOT NULL,
    state TEXT NOT NULL,
    failure TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (scope, collection, name)
  );`,
  // 4: webhooks, their deliveries and the change-feed consumers' positions. Data directories
  // written before this migration created these tables as each part opened, hence IF NOT EXISTS.
  `  CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    project_id TEXT NOT NULL,
    env TEXT NOT NULL,
    collection TEXT NOT NULL,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL,
    sealed_secret TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS webhooks_collection ON webhooks (scope, collection, created_at, id);

  CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id TEXT PRIMARY KEY,
    webhook_id TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body TEXT NOT NULL
  );
  CREATE INDEX IF NOT EXISTS webhook_deliveries_newest ON webhook_deliveries (webhook_id, created_at, id);

  CREATE TABLE IF NOT EXISTS feed_consumers (
    name TEXT PRIMARY KEY,
    holder TEXT,
    lease_expires_ms INTEGER,
    position TEXT
  );
  `,
  // 5: per-project automatic indexes (1 on, 0 off, NULL = the server's default).
  `ALTER TABLE projects ADD COLUMN auto_indexes INTEGER;`,
  // 6: one row a durable barrier rewrites after deferred commits (groupCommit.ts): a commit that
  // writes nothing would not sync the WAL.
  `CREATE TABLE sync_marks (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);`,
  // 7: collection schemas (collectionSchemas.ts) and the trash (trash.ts): deleted documents and
  // their history, kept apart from `versions` because a trashed id may be taken again meanwhile.
  `CREATE TABLE collection_schemas (
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    schema TEXT NOT NULL,
    mode TEXT NOT NULL,
    revision TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, collection)
  );
  CREATE TABLE trash (
    scope TEXT NOT NULL,
    collection TEXT NOT NULL,
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    deleted_at TEXT NOT NULL,
    api_key_hint TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (scope, collection, id)
  );
  CREATE INDEX trash_newest ON trash (scope, collection, deleted_at, id);
  CREATE INDEX trash_expiry ON trash (expires_at);
  ${historyTable('trash_versions')}`,
  // 8: documents' bodies in the API form (apiText.ts); rows written before keep the `_folio` form
  // (0) until converted in chunks after start-up (storedForms.ts), which finds them through a
  // partial index that is empty once they all are.
  `ALTER TABLE documents ADD COLUMN api_form INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX documents_stored_form ON documents (api_form) WHERE api_form = 0;`,
  // 9: a document's current version lives in its `documents` row alone: its operation and key
  // hint join it there, and `versions` holds the versions before it (documents.ts). A row with a
  // NULL operation was written before, when `versions` held the current version too; it reads
  // correctly as it is, and is moved to the new layout after start-up (historyLayout.ts), found
  // through a partial index that is empty once they all are.
  `ALTER TABLE documents ADD COLUMN operation TEXT;
  ALTER TABLE documents ADD COLUMN api_key_hint TEXT;
  CREATE INDEX documents_history_layout ON documents (operation) WHERE operation IS NULL;`,
  // 10: a key's rules (KeyRule[] as JSON; NULL = unrestricted, as every key made before).
  `ALTER TABLE api_keys ADD COLUMN rules TEXT;`,
];

/** The schema version a fully migrated database reports. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Apply every migration not yet applied, each in its own transaction; up to `target` (tests
 * build the data directories of older versions with it).
 */
export function applySchema(db: Database.Database, target = SCHEMA_VERSION): void {
  const current = db.pragma('user_version', { simple: true });
  const applied = typeof current === 'number' ? current : 0;
  if (applied > SCHEMA_VERSION) {
    throw new Error(
      `The data directory was written by a newer Folio (schema ${applied}; this build knows ${SCHEMA_VERSION}).`,
    );
  }
  for (let i = applied; i < target; i++) {
    const sql = MIGRATIONS[i]!;
    db.transaction(() => {
      db.exec(sql);
      // user_version cannot be bound as a parameter; i + 1 is a trusted integer.
      db.pragma(`user_version = ${i + 1}`);
    }).immediate();
  }
}
