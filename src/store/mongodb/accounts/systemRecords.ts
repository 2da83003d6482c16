/**
 * How the port's account, session, project and key records are stored in the system database:
 * `id` becomes `_id`; everything else keeps its name. Two additions: accounts carry
 * `emailLower` (the unique, case-insensitive lookup key) and a session's `expiresAt` is a BSON
 * Date so MongoDB's TTL monitor can remove expired sessions. ISO strings with milliseconds
 * (what Folio writes) come back unchanged.
 */
import type { Document } from 'mongodb';
import type { AccountRecord, ApiKeyRecord, ProjectRecord, ResolvedKey, SessionRecord } from '../../port.js';

/** A port record as stored: `id` becomes `_id`. */
type WithMongoId<T extends { id: string }> = Omit<T, 'id'> & { _id: string };

export type AccountDoc = WithMongoId<AccountRecord> & { emailLower: string };

export type SessionDoc = Omit<SessionRecord, 'tokenHash' | 'expiresAt'> & { _id: string; expiresAt: Date };

/** `allowedOrigins` is absent on projects written before it existed. */
export type ProjectDoc = Omit<WithMongoId<ProjectRecord>, 'allowedOrigins' | 'autoIndexes'> & {
  allowedOrigins?: string[] | null;
  autoIndexes?: boolean | null;
};

/**
 * `rules` as JSON text, as the embedded store keeps them: a rule's filter names document paths
 * (`address.city`), which MongoDB would read as paths, not names, in a stored sub-document.
 * Absent on keys written before rules existed: unrestricted.
 */
export type KeyDoc = Omit<WithMongoId<ApiKeyRecord>, 'rules'> & { rules?: string | null };

/** A key's rules as `KeyDoc.rules` holds them (null: unrestricted). */
export function rulesText(rules: ApiKeyRecord['rules'] | undefined): string | null {
  return rules ? JSON.stringify(rules) : null;
}

/** Emails are compared lower-cased. */
export function emailKey(email: string): string {
  return email.toLowerCase();
}

export function toAccountDoc(a: AccountRecord): AccountDoc {
  return {
    _id: a.id,
    email: a.email,
    emailLower: emailKey(a.email),
    passwordHash: a.passwordHash,
    plan: a.plan,
    createdAt: a.createdAt,
  };
}

export function fromAccountDoc(d: AccountDoc): AccountRecord {
  return { id: d._id, email: d.email, passwordHash: d.passwordHash, plan: d.plan, createdAt: d.createdAt };
}

export function toSessionDoc(s: SessionRecord): SessionDoc {
  return {
    _id: s.tokenHash,
    accountId: s.accountId,
    createdAt: s.createdAt,
    expiresAt: new Date(s.expiresAt),
  };
}

export function fromSessionDoc(d: SessionDoc): SessionRecord {
  return {
    tokenHash: d._id,
    accountId: d.accountId,
    createdAt: d.createdAt,
    expiresAt: d.expiresAt.toISOString(),
  };
}

export function toProjectDoc(p: ProjectRecord): ProjectDoc {
  return {
    _id: p.id,
    accountId: p.accountId,
    name: p.name,
    createdAt: p.createdAt,
    allowedOrigins: p.allowedOrigins,
    ...(p.autoIndexes == null ? {} : { autoIndexes: p.autoIndexes }),
  };
}

/** Projects written before allowed origins existed have no field: the default policy. */
export function fromProjectDoc(d: ProjectDoc): ProjectRecord {
  return {
    id: d._id,
    accountId: d.accountId,
    name: d.name,
    createdAt: d.createdAt,
    allowedOrigins: d.allowedOrigins ?? null,
    // Absent unless the owner chose (null is stored when they went back to the default).
    ...(d.autoIndexes == null ? {} : { autoIndexes: d.autoIndexes }),
  };
}

export function toKeyDoc(k: ApiKeyRecord): KeyDoc {
  return {
    _id: k.id,
    projectId: k.projectId,
    name: k.name,
    env: k.env,
    scope: k.scope,
    config: k.config,
    status: k.status,
    keyHash: k.keyHash,
    hint: k.hint,
    createdAt: k.createdAt,
    lastUsedAt: k.lastUsedAt,
    revokedAt: k.revokedAt,
    rotatedFrom: k.rotatedFrom,
    // Absent in backups written before rules existed.
    rules: rulesText(k.rules),
  };
}

export function fromKeyDoc(d: KeyDoc): ApiKeyRecord {
  return {
    id: d._id,
    projectId: d.projectId,
    name: d.name,
    env: d.env,
    scope: d.scope,
    config: d.config,
    status: d.status,
    keyHash: d.keyHash,
    hint: d.hint,
    createdAt: d.createdAt,
    lastUsedAt: d.lastUsedAt ?? null,
    revokedAt: d.revokedAt ?? null,
    rotatedFrom: d.rotatedFrom ?? null,
    rules: d.rules ? (JSON.parse(d.rules) as ApiKeyRecord['rules']) : null,
  };
}

/** A key document with its project and that project's account joined in (`resolveKeyPipeline`). */
export type ResolvedKeyDoc = KeyDoc & { project: ProjectDoc; account: AccountDoc };

/**
 * One aggregation on the keys collection that returns the key with the key's project and the
 * project's account: authenticating a request costs one round trip instead of three. The
 * `$match` uses the unique `keyHash` index and each `$lookup` an `_id` index. A key whose
 * project or account is missing yields nothing (`$unwind` drops it).
 */
export function resolveKeyPipeline(
  keyHash: string,
  collections: { projects: string; accounts: string },
): Document[] {
  return [
    { $match: { keyHash } },
    { $limit: 1 },
    { $lookup: { from: collections.projects, localField: 'projectId', foreignField: '_id', as: 'project' } },
    { $unwind: '$project' },
    {
      $lookup: {
        from: collections.accounts,
        localField: 'project.accountId',
        foreignField: '_id',
        as: 'account',
      },
    },
    { $unwind: '$account' },
  ];
}

export function fromResolvedKeyDoc(d: ResolvedKeyDoc): ResolvedKey {
  return { key: fromKeyDoc(d), project: fromProjectDoc(d.project), account: fromAccountDoc(d.account) };
}
