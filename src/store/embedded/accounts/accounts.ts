/**
 * Accounts, sessions, projects and API keys on SQLite. Uniqueness is enforced by the schema's
 * UNIQUE constraints and surfaced as the port's DuplicateError.
 */
import Database from 'better-sqlite3';
import {
  type AccountRecord,
  type AccountRepository,
  type ApiKeyRecord,
  DuplicateError,
  type Env,
  type JsonObject,
  type KeyRule,
  type KeyScope,
  type KeyStatus,
  type Plan,
  type ProjectRecord,
  type ResolvedKey,
  type SessionRecord,
} from '../../port.js';
import { ChunkedSweep, chunkWasFull } from '../database/chunkedSweep.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';

export interface AccountRow {
  id: string;
  email: string;
  password_hash: string;
  plan: Plan;
  created_at: string;
}

interface SessionRow {
  token_hash: string;
  account_id: string;
  created_at: string;
  expires_at: string;
}

export interface ProjectRow {
  id: string;
  account_id: string;
  name: string;
  created_at: string;
  allowed_origins: string | null;
  auto_indexes: number | null;
}

export interface KeyRow {
  id: string;
  project_id: string;
  name: string;
  env: Env;
  scope: KeyScope;
  config: string;
  status: KeyStatus;
  key_hash: string;
  hint: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  rotated_from: string | null;
  rules: string | null;
}

/** The port's name for each unique column, as DuplicateError reports it. */
const UNIQUE_FIELDS: Record<string, string> = {
  'accounts.email_key': 'email',
  'projects.account_id, projects.name': 'name',
  'api_keys.key_hash': 'keyHash',
  'accounts.id': 'id',
  'sessions.token_hash': 'tokenHash',
  'projects.id': 'id',
  'api_keys.id': 'id',
};

/** Run `fn`, turning a UNIQUE/PRIMARY KEY violation into DuplicateError naming the field. */
function translatingDuplicates<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (
      error instanceof Database.SqliteError &&
      (error.code === 'SQLITE_CONSTRAINT_UNIQUE' || error.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    ) {
      // The message reads "UNIQUE constraint failed: table.col[, table.col]".
      const columns = error.message.slice(error.message.indexOf(':') + 1).trim();
      throw new DuplicateError(UNIQUE_FIELDS[columns] ?? columns);
    }
    throw error;
  }
}

/** Emails are unique regardless of case. */
function emailKey(email: string): string {
  return email.toLowerCase();
}

/** Rows as the port's records (also read by snapshotRows.ts). */
export const toAccount = (r: AccountRow): AccountRecord => ({
  id: r.id,
  email: r.email,
  passwordHash: r.password_hash,
  plan: r.plan,
  createdAt: r.created_at,
});

const toSession = (r: SessionRow): SessionRecord => ({
  tokenHash: r.token_hash,
  accountId: r.account_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

const originsText = (origins: string[] | null) => (origins === null ? null : JSON.stringify(origins));

/** A key's rules as stored (NULL: unrestricted). */
export const rulesText = (rules: KeyRule[] | null) => (rules === null ? null : JSON.stringify(rules));

export const toProject = (r: ProjectRow): ProjectRecord => ({
  id: r.id,
  accountId: r.account_id,
  name: r.name,
  createdAt: r.created_at,
  allowedOrigins: r.allowed_origins === null ? null : (JSON.parse(r.allowed_origins) as string[]),
  // Absent unless the owner chose: the record then reads as the server's default.
  ...(r.auto_indexes === null ? {} : { autoIndexes: r.auto_indexes === 1 }),
});

export const toKey = (r: KeyRow): ApiKeyRecord => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  env: r.env,
  scope: r.scope,
  config: JSON.parse(r.config) as JsonObject,
  status: r.status,
  keyHash: r.key_hash,
  hint: r.hint,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at,
  revokedAt: r.revoked_at,
  rotatedFrom: r.rotated_from,
  rules: r.rules === null ? null : (JSON.parse(r.rules) as KeyRule[]),
});

const KEY_COLUMNS =
  'id, project_id, name, env, scope, config, status, key_hash, hint, created_at, last_used_at, revoked_at, rotated_from, rules';

export class EmbeddedAccounts implements AccountRepository {
  readonly #insertAccount: Database.Statement<[string, string, string, string, Plan, string]>;
  readonly #accountById: Database.Statement<[string], AccountRow>;
  readonly #accountByEmail: Database.Statement<[string], AccountRow>;
  readonly #setPlan: Database.Statement<[Plan, string]>;
  readonly #countAccounts: Database.Statement<[], { n: number }>;

  readonly #insertSession: Database.Statement<[string, string, string, string]>;
  readonly #sweepSessions: Database.Statement<[string, number]>;
  readonly #sessionSweeps: ChunkedSweep;
  readonly #liveSession: Database.Statement<[string, string], SessionRow>;
  readonly #deleteSession: Database.Statement<[string]>;

  readonly #insertProject: Database.Statement<[string, string, string, string, string | null]>;
  readonly #projectById: Database.Statement<[string], ProjectRow>;
  readonly #projectByName: Database.Statement<[string, string], ProjectRow>;
  readonly #projectsOf: Database.Statement<[string], ProjectRow>;
  readonly #setOrigins: Database.Statement<[string | null, string]>;
  readonly #setAutoIndexes: Database.Statement<[number | null, string]>;

  readonly #insertKey: Database.Statement<
    [
      string,
      string,
      string,
      Env,
      KeyScope,
      string,
      KeyStatus,
      string,
      string,
      string,
      string | null,
      string | null,
      string | null,
      string | null,
    ]
  >;
  readonly #keyById: Database.Statement<[string], KeyRow>;
  readonly #keyByHash: Database.Statement<[string], KeyRow>;
  readonly #keysOf: Database.Statement<[string], KeyRow>;
  readonly #countActive: Database.Statement<[string], { n: number }>;
  readonly #revoke: Database.Statement<[string, string]>;
  readonly #touch: Database.Statement<[string, string]>;
  readonly #setRules: Database.Statement<[string | null, string]>;
  readonly #rotateTx: (oldId: string, replacement: ApiKeyRecord, at: string) => boolean;
  readonly #createKeyTx: (key: ApiKeyRecord, maxActive: number) => boolean;

  constructor(db: Database.Database, options: { sweepChunkRows?: number | undefined } = {}) {
    this.#sessionSweeps = new ChunkedSweep(options.sweepChunkRows);
    this.#insertAccount = db.prepare(
      'INSERT INTO accounts (id, email, email_key, password_hash, plan, created_at) VALUES (?, ?, ?, ?, ?, ?)',
    );
    this.#accountById = db.prepare('SELECT * FROM accounts WHERE id = ?');
    this.#accountByEmail = db.prepare('SELECT * FROM accounts WHERE email_key = ?');
    this.#setPlan = db.prepare('UPDATE accounts SET plan = ? WHERE id = ?');
    this.#countAccounts = db.prepare('SELECT count(*) AS n FROM accounts');

    this.#insertSession = db.prepare(
      'INSERT INTO sessions (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
    );
    // A chunk of the expired range of sessions_expires (chunkedSweep.ts).
    this.#sweepSessions = db.prepare(
      `DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE expires_at <= ? ORDER BY expires_at LIMIT ${BOUND_COUNT})`,
    );
    // ISO 8601 UTC strings of fixed width compare in time order.
    this.#liveSession = db.prepare('SELECT * FROM sessions WHERE token_hash = ? AND expires_at > ?');
    this.#deleteSession = db.prepare('DELETE FROM sessions WHERE token_hash = ?');

    this.#insertProject = db.prepare(
      'INSERT INTO projects (id, account_id, name, created_at, allowed_origins) VALUES (?, ?, ?, ?, ?)',
    );
    this.#projectById = db.prepare('SELECT * FROM projects WHERE id = ?');
    this.#projectByName = db.prepare('SELECT * FROM projects WHERE account_id = ? AND name = ?');
    this.#projectsOf = db.prepare('SELECT * FROM projects WHERE account_id = ? ORDER BY created_at, id');
    this.#setOrigins = db.prepare('UPDATE projects SET allowed_origins = ? WHERE id = ?');
    this.#setAutoIndexes = db.prepare('UPDATE projects SET auto_indexes = ? WHERE id = ?');

    this.#insertKey = db.prepare(
      `INSERT INTO api_keys (${KEY_COLUMNS}) VALUES (${KEY_COLUMNS.replace(/\w+/g, '?')})`,
    );
    this.#keyById = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE id = ?`);
    this.#keyByHash = db.prepare(`SELECT ${KEY_COLUMNS} FROM api_keys WHERE key_hash = ?`);
    this.#keysOf = db.prepare(
      `SELECT ${KEY_COLUMNS} FROM api_keys WHERE project_id = ? ORDER BY created_at DESC, id DESC`,
    );
    this.#countActive = db.prepare(
      "SELECT count(*) AS n FROM api_keys WHERE project_id = ? AND status = 'active'",
    );
    this.#revoke = db.prepare(
      "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE id = ? AND status = 'active'",
    );
    this.#touch = db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
    this.#setRules = db.prepare("UPDATE api_keys SET rules = ? WHERE id = ? AND status = 'active'");
    this.#createKeyTx = db.transaction((key: ApiKeyRecord, maxActive: number): boolean => {
      if (this.#countActive.get(key.projectId)!.n >= maxActive) return false;
      this.#insertKeyRow(key);
      return true;
    }).immediate;
    this.#rotateTx = db.transaction((oldId: string, replacement: ApiKeyRecord, at: string): boolean => {
      if (this.#revoke.run(at, oldId).changes === 0) return false;
      // A failing insert throws, which rolls the revocation back with it.
      this.#insertKeyRow(replacement);
      return true;
    }).immediate;
  }

  async createAccount(account: AccountRecord): Promise<void> {
    translatingDuplicates(() =>
      this.#insertAccount.run(
        account.id,
        account.email,
        emailKey(account.email),
        account.passwordHash,
        account.plan,
        account.createdAt,
      ),
    );
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const row = this.#accountById.get(id);
    return row ? toAccount(row) : null;
  }

  async findAccountByEmail(email: string): Promise<AccountRecord | null> {
    const row = this.#accountByEmail.get(emailKey(email));
    return row ? toAccount(row) : null;
  }

  async setPlan(accountId: string, plan: Plan): Promise<void> {
    this.#setPlan.run(plan, accountId);
  }

  async countAccounts(): Promise<number> {
    return this.#countAccounts.get()?.n ?? 0;
  }

  async createSession(session: SessionRecord): Promise<void> {
    // Sweeping here keeps the table to live sessions without a timer; the index makes it cheap,
    // and chunks keep a large backlog (logins rare, sessions many) from holding the event loop.
    await this.#sessionSweeps.run(
      () => session.createdAt,
      (now, rows) => {
        const removed = this.#sweepSessions.run(now, rows).changes;
        return { removed, more: chunkWasFull(removed, rows) };
      },
    );
    translatingDuplicates(() =>
      this.#insertSession.run(session.tokenHash, session.accountId, session.createdAt, session.expiresAt),
    );
  }

  /** No sweep chunk runs after this (the store is closing); waits for the one under way. */
  stopSweeps(): Promise<void> {
    return this.#sessionSweeps.stop();
  }

  async findSession(tokenHash: string, now: string): Promise<SessionRecord | null> {
    const row = this.#liveSession.get(tokenHash, now);
    return row ? toSession(row) : null;
  }

  async deleteSession(tokenHash: string): Promise<void> {
    this.#deleteSession.run(tokenHash);
  }

  async createProject(project: ProjectRecord): Promise<void> {
    translatingDuplicates(() =>
      this.#insertProject.run(
        project.id,
        project.accountId,
        project.name,
        project.createdAt,
        originsText(project.allowedOrigins),
      ),
    );
  }

  async getProject(id: string): Promise<ProjectRecord | null> {
    const row = this.#projectById.get(id);
    return row ? toProject(row) : null;
  }

  async findProject(accountId: string, name: string): Promise<ProjectRecord | null> {
    const row = this.#projectByName.get(accountId, name);
    return row ? toProject(row) : null;
  }

  async listProjects(accountId: string): Promise<ProjectRecord[]> {
    return this.#projectsOf.all(accountId).map(toProject);
  }

  async setAllowedOrigins(projectId: string, origins: string[] | null): Promise<void> {
    this.#setOrigins.run(originsText(origins), projectId);
  }

  async setAutoIndexes(projectId: string, enabled: boolean | null): Promise<void> {
    this.#setAutoIndexes.run(enabled === null ? null : enabled ? 1 : 0, projectId);
  }

  async createKey(key: ApiKeyRecord, maxActive: number): Promise<boolean> {
    return this.#createKeyTx(key, maxActive);
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const row = this.#keyById.get(id);
    return row ? toKey(row) : null;
  }

  async findKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const row = this.#keyByHash.get(keyHash);
    return row ? toKey(row) : null;
  }

  async resolveKey(keyHash: string): Promise<ResolvedKey | null> {
    // Three indexed reads in this process: the "one round trip" of a remote store.
    const key = this.#keyByHash.get(keyHash);
    const project = key ? this.#projectById.get(key.project_id) : undefined;
    const account = project ? this.#accountById.get(project.account_id) : undefined;
    if (!key || !project || !account) return null;
    return { key: toKey(key), project: toProject(project), account: toAccount(account) };
  }

  async listKeys(projectId: string): Promise<ApiKeyRecord[]> {
    return this.#keysOf.all(projectId).map(toKey);
  }

  async countActiveKeys(projectId: string): Promise<number> {
    return this.#countActive.get(projectId)?.n ?? 0;
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    return this.#revoke.run(at, id).changes === 1;
  }

  async rotateKey(oldId: string, replacement: ApiKeyRecord, at: string): Promise<boolean> {
    return this.#rotateTx(oldId, replacement, at);
  }

  async setKeyRules(id: string, rules: KeyRule[] | null): Promise<boolean> {
    return this.#setRules.run(rulesText(rules), id).changes === 1;
  }

  async touchKey(id: string, at: string): Promise<void> {
    this.#touch.run(at, id);
  }

  #insertKeyRow(key: ApiKeyRecord): void {
    translatingDuplicates(() =>
      this.#insertKey.run(
        key.id,
        key.projectId,
        key.name,
        key.env,
        key.scope,
        JSON.stringify(key.config),
        key.status,
        key.keyHash,
        key.hint,
        key.createdAt,
        key.lastUsedAt,
        key.revokedAt,
        key.rotatedFrom,
        rulesText(key.rules),
      ),
    );
  }
}
