/**
 * Accounts, sessions, projects and API keys in the system database, shared by every Folio
 * instance on the deployment. Uniqueness comes from the unique indexes in indexes.ts and is
 * surfaced as the port's DuplicateError.
 */
import type { Collection, Db, MongoClient } from 'mongodb';
import {
  type AccountRecord,
  type AccountRepository,
  type ApiKeyRecord,
  DuplicateError,
  type KeyRule,
  type Plan,
  type ProjectRecord,
  type ResolvedKey,
  type SessionRecord,
} from '../../port.js';
import { type GuardDoc, guardId, insertWhileBelow } from '../database/guards.js';
import { duplicateKeyFields, isDuplicateKeyError } from '../database/serverErrors.js';
import { inTransaction, type WriteLimits } from '../database/transactions.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';
import {
  type AccountDoc,
  emailKey,
  fromAccountDoc,
  fromKeyDoc,
  fromProjectDoc,
  fromResolvedKeyDoc,
  fromSessionDoc,
  type KeyDoc,
  type ProjectDoc,
  type ResolvedKeyDoc,
  resolveKeyPipeline,
  rulesText,
  type SessionDoc,
  toAccountDoc,
  toKeyDoc,
  toProjectDoc,
  toSessionDoc,
} from './systemRecords.js';

/** Stored field of a unique index → the port's field name in DuplicateError. */
const DUPLICATE_FIELDS: Record<string, string> = {
  emailLower: 'email',
  name: 'name',
  keyHash: 'keyHash',
};

/**
 * The port's DuplicateError for a duplicate-key error, naming the unique field it is about
 * (`idField` when it is the `_id`); null for any other error.
 */
export function toDuplicateError(error: unknown, idField: string): DuplicateError | null {
  if (!isDuplicateKeyError(error)) return null;
  const known = duplicateKeyFields(error).find((f) => Object.hasOwn(DUPLICATE_FIELDS, f));
  return new DuplicateError(known ? DUPLICATE_FIELDS[known]! : idField);
}

/** Run `write`, turning a duplicate-key error into the port's DuplicateError. */
async function translatingDuplicates<T>(write: () => Promise<T>, idField: string): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw toDuplicateError(error, idField) ?? error;
  }
}

export class MongoAccounts implements AccountRepository {
  readonly #accounts: Collection<AccountDoc>;
  readonly #sessions: Collection<SessionDoc>;
  readonly #projects: Collection<ProjectDoc>;
  readonly #keys: Collection<KeyDoc>;

  readonly #settings: Collection<GuardDoc>;

  constructor(
    private readonly client: MongoClient,
    db: Db,
    private readonly limits: WriteLimits,
  ) {
    this.#accounts = db.collection<AccountDoc>(SYSTEM_COLLECTIONS.accounts);
    this.#sessions = db.collection<SessionDoc>(SYSTEM_COLLECTIONS.sessions);
    this.#projects = db.collection<ProjectDoc>(SYSTEM_COLLECTIONS.projects);
    this.#keys = db.collection<KeyDoc>(SYSTEM_COLLECTIONS.keys);
    this.#settings = db.collection<GuardDoc>(SYSTEM_COLLECTIONS.settings);
  }

  async createAccount(account: AccountRecord): Promise<void> {
    await translatingDuplicates(() => this.#accounts.insertOne(toAccountDoc(account)), 'id');
  }

  async getAccount(id: string): Promise<AccountRecord | null> {
    const doc = await this.#accounts.findOne({ _id: id });
    return doc ? fromAccountDoc(doc) : null;
  }

  async findAccountByEmail(email: string): Promise<AccountRecord | null> {
    const doc = await this.#accounts.findOne({ emailLower: emailKey(email) });
    return doc ? fromAccountDoc(doc) : null;
  }

  async setPlan(accountId: string, plan: Plan): Promise<void> {
    await this.#accounts.updateOne({ _id: accountId }, { $set: { plan } });
  }

  async countAccounts(): Promise<number> {
    return this.#accounts.countDocuments({});
  }

  async createSession(session: SessionRecord): Promise<void> {
    await translatingDuplicates(() => this.#sessions.insertOne(toSessionDoc(session)), 'tokenHash');
  }

  async findSession(tokenHash: string, now: string): Promise<SessionRecord | null> {
    // The TTL monitor removes expired sessions only about once a minute: compare as well.
    const doc = await this.#sessions.findOne({ _id: tokenHash, expiresAt: { $gt: new Date(now) } });
    return doc ? fromSessionDoc(doc) : null;
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.#sessions.deleteOne({ _id: tokenHash });
  }

  async createProject(project: ProjectRecord): Promise<void> {
    await translatingDuplicates(() => this.#projects.insertOne(toProjectDoc(project)), 'id');
  }

  async getProject(id: string): Promise<ProjectRecord | null> {
    const doc = await this.#projects.findOne({ _id: id });
    return doc ? fromProjectDoc(doc) : null;
  }

  async findProject(accountId: string, name: string): Promise<ProjectRecord | null> {
    const doc = await this.#projects.findOne({ accountId, name });
    return doc ? fromProjectDoc(doc) : null;
  }

  async listProjects(accountId: string): Promise<ProjectRecord[]> {
    const docs = await this.#projects
      .find(
        { accountId },
        {
          sort: [
            ['createdAt', 1],
            ['_id', 1],
          ],
        },
      )
      .toArray();
    return docs.map(fromProjectDoc);
  }

  async setAllowedOrigins(projectId: string, origins: string[] | null): Promise<void> {
    await this.#projects.updateOne({ _id: projectId }, { $set: { allowedOrigins: origins } });
  }

  async setAutoIndexes(projectId: string, enabled: boolean | null): Promise<void> {
    await this.#projects.updateOne({ _id: projectId }, { $set: { autoIndexes: enabled } });
  }

  async createKey(key: ApiKeyRecord, maxActive: number): Promise<boolean> {
    const { result } = await translatingDuplicates(
      () =>
        inTransaction(this.client, this.limits, (session) =>
          insertWhileBelow(
            session,
            {
              settings: this.#settings,
              id: guardId({ kind: 'activeKeys', projectId: key.projectId }),
              writer: key.id,
            },
            maxActive,
            () => this.#keys.countDocuments({ projectId: key.projectId, status: 'active' }, { session }),
            () => this.#keys.insertOne(toKeyDoc(key), { session }),
          ),
        ),
      'id',
    );
    return result;
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const doc = await this.#keys.findOne({ _id: id });
    return doc ? fromKeyDoc(doc) : null;
  }

  async findKeyByHash(keyHash: string): Promise<ApiKeyRecord | null> {
    const doc = await this.#keys.findOne({ keyHash });
    return doc ? fromKeyDoc(doc) : null;
  }

  async resolveKey(keyHash: string): Promise<ResolvedKey | null> {
    const [row] = await this.#keys
      .aggregate<ResolvedKeyDoc>(resolveKeyPipeline(keyHash, SYSTEM_COLLECTIONS))
      .toArray();
    return row ? fromResolvedKeyDoc(row) : null;
  }

  async listKeys(projectId: string): Promise<ApiKeyRecord[]> {
    const docs = await this.#keys
      .find(
        { projectId },
        {
          sort: [
            ['createdAt', -1],
            ['_id', -1],
          ],
        },
      )
      .toArray();
    return docs.map(fromKeyDoc);
  }

  async countActiveKeys(projectId: string): Promise<number> {
    return this.#keys.countDocuments({ projectId, status: 'active' });
  }

  async revokeKey(id: string, at: string): Promise<boolean> {
    const result = await this.#keys.updateOne(
      { _id: id, status: 'active' },
      { $set: { status: 'revoked', revokedAt: at } },
    );
    return result.matchedCount === 1;
  }

  async rotateKey(oldId: string, replacement: ApiKeyRecord, at: string): Promise<boolean> {
    const { result } = await translatingDuplicates(
      () =>
        inTransaction(this.client, this.limits, async (session) => {
          const revoked = await this.#keys.updateOne(
            { _id: oldId, status: 'active' },
            { $set: { status: 'revoked', revokedAt: at } },
            { session },
          );
          if (revoked.matchedCount === 0) {
            await session.abortTransaction();
            return false;
          }
          // A duplicate key here aborts the transaction: the old key stays active.
          await this.#keys.insertOne(toKeyDoc(replacement), { session });
          return true;
        }),
      'id',
    );
    return result;
  }

  async setKeyRules(id: string, rules: KeyRule[] | null): Promise<boolean> {
    const result = await this.#keys.updateOne(
      { _id: id, status: 'active' },
      { $set: { rules: rulesText(rules) } },
    );
    return result.matchedCount === 1;
  }

  async touchKey(id: string, at: string): Promise<void> {
    await this.#keys.updateOne({ _id: id }, { $set: { lastUsedAt: at } });
  }
}
