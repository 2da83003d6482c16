/** Accounts, sessions, projects and API keys; rate-limit counters and stream-slot leases. */
import type { Env, JsonObject } from './documents.js';

export type Plan = 'free' | 'pro' | 'team';
export type KeyScope = 'read-write' | 'read-only';
export type KeyStatus = 'active' | 'revoked';

export interface AccountRecord {
  id: string;
  email: string;
  passwordHash: string;
  plan: Plan;
  createdAt: string;
}

export interface SessionRecord {
  tokenHash: string;
  accountId: string;
  createdAt: string;
  expiresAt: string;
}

export interface ProjectRecord {
  id: string;
  accountId: string;
  name: string;
  createdAt: string;
  /**
   * Browser origins allowed to call the project's data routes with any of its keys, or null for
   * the default policy (any origin for read-only keys, none for read-write keys).
   */
  allowedOrigins: string[] | null;
  /**
   * Automatic indexes for the project's collections: on, off, or null/absent for the server's
   * default (configuration `autoIndexes.enabled`).
   */
  autoIndexes?: boolean | null;
}

/**
 * One permission of a key: the collections it names (exact names, or prefixes ending in `*`),
 * the access it grants there (`write` includes read) and, optionally, which documents of them
 * the key sees, in the list's filter language as JSON. What rules mean is the services' business
 * (keyAccess.ts); the store keeps them as given.
 */
export interface KeyRule {
  collections: string[];
  access: 'read' | 'write';
  filter?: JsonObject;
}

export interface ApiKeyRecord {
  id: string;
  projectId: string;
  name: string;
  env: Env;
  scope: KeyScope;
  config: JsonObject;
  status: KeyStatus;
  /** SHA-256 of the raw key, hex. The raw key is never stored. */
  keyHash: string;
  /** `folio_sk_<env>_...abcd` */
  hint: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
  rotatedFrom: string | null;
  /** The key's permissions, or null for none: it reaches every collection (keys made before rules). */
  rules: KeyRule[] | null;
}
export interface AccountRepository {
  /** Throws DuplicateError('email') if the email (compared lower-cased) is taken. */
  createAccount(account: AccountRecord): Promise<void>;
  getAccount(id: string): Promise<AccountRecord | null>;
  findAccountByEmail(email: string): Promise<AccountRecord | null>;
  setPlan(accountId: string, plan: Plan): Promise<void>;
  countAccounts(): Promise<number>;

  createSession(session: SessionRecord): Promise<void>;
  /** The session, or null when unknown or expired at `now`. */
  findSession(tokenHash: string, now: string): Promise<SessionRecord | null>;
  deleteSession(tokenHash: string): Promise<void>;

  /** Throws DuplicateError('name') if the account already has a project of that name. */
  createProject(project: ProjectRecord): Promise<void>;
  getProject(id: string): Promise<ProjectRecord | null>;
  findProject(accountId: string, name: string): Promise<ProjectRecord | null>;
  listProjects(accountId: string): Promise<ProjectRecord[]>;
  /** Replace the project's allowed origins (null: the default policy). */
  setAllowedOrigins(projectId: string, origins: string[] | null): Promise<void>;
  /** Set the project's automatic-index setting (null: the server's default). */
  setAutoIndexes(projectId: string, enabled: boolean | null): Promise<void>;

  /**
   * Create the key unless its project already has `maxActive` active keys: false then, and
   * nothing written. Atomic: concurrent creates never take a project past the maximum.
   * Throws DuplicateError('id') or DuplicateError('keyHash') if either is taken.
   */
  createKey(key: ApiKeyRecord, maxActive: number): Promise<boolean>;
  getKey(id: string): Promise<ApiKeyRecord | null>;
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | null>;
  /**
   * The key with its project and that project's account, in one round trip to the store (what
   * authenticating a request needs); null when any of the three is unknown.
   */
  resolveKey(keyHash: string): Promise<ResolvedKey | null>;
  /** Keys of a project, newest first. */
  listKeys(projectId: string): Promise<ApiKeyRecord[]>;
  countActiveKeys(projectId: string): Promise<number>;
  /** Mark the key revoked; returns false if it was not active. */
  revokeKey(id: string, at: string): Promise<boolean>;
  /** Atomically revoke the old key and insert its replacement; false if the old one was not active. */
  rotateKey(oldId: string, replacement: ApiKeyRecord, at: string): Promise<boolean>;
  /** Replace an active key's rules (null: unrestricted); false, and nothing written, if it is not active. */
  setKeyRules(id: string, rules: KeyRule[] | null): Promise<boolean>;
  /** Best-effort last-use stamp. */
  touchKey(id: string, at: string): Promise<void>;
}

/** An API key and what owns it, as `AccountRepository.resolveKey` returns them. */
export interface ResolvedKey {
  key: ApiKeyRecord;
  project: ProjectRecord;
  account: AccountRecord;
}

export interface CounterRepository {
  /**
   * Count one hit against `key` in a window that opens at the first hit and lasts `windowMs`.
   * Atomic: concurrent hits (from any number of processes sharing the store) are all counted.
   * `nowMs` is the caller's clock. A store shared by several processes decides windows by one
   * clock of its own instead (so instances with skewed clocks agree) and reports `resetAtMs`
   * translated into the caller's clock: the time left in the window is what it says.
   */
  hit(key: string, windowMs: number, nowMs: number): Promise<{ count: number; resetAtMs: number }>;
}

/**
 * Leases on concurrent-stream slots, per holder (an API key id). Each open stream holds one slot;
 * a slot not renewed within its time to live is free again, so a crashed instance's streams stop
 * counting. The embedded store (one process) may keep them in memory.
 */
export interface StreamSlotRepository {
  /**
   * Take a slot for `slotId` if the holder has fewer than `max` live ones. Atomic: any number of
   * processes sharing the store never hand out more than `max`. False when all are taken.
   */
  acquire(holder: string, slotId: string, max: number, ttlMs: number): Promise<boolean>;
  /** Extend a held slot to `ttlMs` from now; false when it is no longer held (expired). */
  renew(holder: string, slotId: string, ttlMs: number): Promise<boolean>;
  /** Free the slot at once. Idempotent. */
  release(holder: string, slotId: string): Promise<void>;
}
