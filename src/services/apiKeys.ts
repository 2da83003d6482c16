/** API keys: issue, list, revoke, rotate, and authenticate a request's key. */
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { AppError, badRequest, forbidden, notFound, planLimitExceeded, unauthorized } from '../errors.js';
import { isoNow, newId } from '../ids.js';
import { MAX_CONTAINS_LENGTH, MAX_IN_ITEMS } from '../query/filterParams.js';
import type {
  AccountRecord,
  ApiKeyRecord,
  KeyRule,
  KeyScope,
  ProjectRecord,
  ResolvedKey,
  Store,
} from '../store/port.js';
import type { KeyContext } from './context.js';
import { compileKeyAccess, compileRuleFilter, type KeyAccess } from './keyAccess.js';
import type { KeyCache } from './keyCache.js';
import { generateApiKey, hashToken, KEY_PATTERN, keyHint } from './secrets.js';

/** Rules per key, collection entries per rule, and the rules' JSON size: bounds on what each request checks. */
export const MAX_KEY_RULES = 20;
export const MAX_RULE_COLLECTIONS = 20;
export const MAX_RULES_BYTES = 8192;

// An exact collection name, or a prefix of one followed by `*` (`*` alone: every collection).
const RULE_COLLECTION = /^(?:[A-Za-z0-9][A-Za-z0-9_-]{0,63}|(?:[A-Za-z0-9][A-Za-z0-9_-]{0,62})?\*)$/;

const filterScalar = z.union([z.string().max(MAX_CONTAINS_LENGTH), z.number(), z.boolean(), z.null()]);
const filterOperand = z.union([filterScalar, z.array(filterScalar).max(MAX_IN_ITEMS)]);

export const keyRuleSchema = z
  .strictObject({
    collections: z
      .array(
        z.string().regex(RULE_COLLECTION, 'a collection name, or a prefix of one ending in * (public_*)'),
      )
      .min(1)
      .max(MAX_RULE_COLLECTIONS),
    access: z.enum(['read', 'write']).meta({ description: '`write` includes read.' }),
    filter: z
      .record(z.string(), z.union([filterScalar, z.record(z.string(), filterOperand)]))
      .optional()
      .meta({
        description:
          'Which documents the key sees and writes, in the list filter language as JSON: `{"published": true}`, `{"n": {"gte": 3}}`, `{"team": {"in": ["a", "b"]}}`. Absent: every document.',
      }),
  })
  .meta({ id: 'KeyRule' });

/**
 * A key's rules: the first rule naming a collection decides the key's access to it (keyAccess.ts);
 * a collection no rule names is out of reach. Null: no rules, every collection.
 */
export const keyRulesSchema = z
  .array(keyRuleSchema)
  .max(MAX_KEY_RULES)
  .nullable()
  .superRefine((rules, ctx) => {
    if (rules === null) return;
    if (JSON.stringify(rules).length > MAX_RULES_BYTES) {
      ctx.addIssue({ code: 'custom', message: `rules take at most ${MAX_RULES_BYTES} bytes as JSON` });
    }
    rules.forEach((rule, i) => {
      try {
        if (rule.filter) compileRuleFilter(rule.filter, i);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        ctx.addIssue({ code: 'custom', path: [i, 'filter'], message: error.message });
      }
    });
  })
  .meta({ id: 'KeyRules' });

export const createKeySchema = z.strictObject({
  project: z.string().min(1),
  name: z.string().trim().min(1).max(100),
  env: z.enum(['live', 'test']),
  scope: z.enum(['read-write', 'read-only']).default('read-write'),
  config: z.record(z.string(), z.json()).default({}),
  rules: keyRulesSchema.default(null),
});
export type CreateKeyInput = z.infer<typeof createKeySchema>;

export const updateKeySchema = z.strictObject({ rules: keyRulesSchema });

/** The key as the API shows it: never the secret or its hash. */
export function publicKey(key: ApiKeyRecord, project: ProjectRecord) {
  return {
    id: key.id,
    name: key.name,
    project: project.name,
    env: key.env,
    scope: key.scope,
    config: key.config,
    status: key.status,
    hint: key.hint,
    rules: key.rules,
    createdAt: key.createdAt,
    lastUsedAt: key.lastUsedAt,
    ...(key.rotatedFrom ? { rotatedFrom: key.rotatedFrom } : {}),
  };
}

// lastUsedAt is informational; stamping it at most once a minute keeps reads read-only.
const TOUCH_INTERVAL_MS = 60_000;

/** A resolved key's KeyContext, and its `lastUsedAt` in epoch ms (-∞ when never used). */
interface Caller {
  context: KeyContext;
  lastUsedMs: number;
}

export class ApiKeyService {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly cache: KeyCache,
  ) {}

  async create(
    account: AccountRecord,
    project: ProjectRecord,
    { rules = null, ...input }: Omit<CreateKeyInput, 'project' | 'rules'> & { rules?: KeyRule[] | null },
  ): Promise<{ apiKey: ApiKeyRecord; rawKey: string }> {
    assertRulesWithinScope(rules, input.scope);
    const max = this.config.plans[account.plan].activeKeys;
    const rawKey = generateApiKey(input.env);
    const apiKey = this.record(project.id, rawKey, { ...input, rules });
    if (!(await this.store.accounts.createKey(apiKey, max))) {
      throw planLimitExceeded('active API keys per project', max, account.plan);
    }
    return { apiKey, rawKey };
  }

  list(project: ProjectRecord): Promise<ApiKeyRecord[]> {
    return this.store.accounts.listKeys(project.id);
  }

  /** The key and its project, if the account owns it; 404 otherwise. */
  async ownKey(
    account: AccountRecord,
    keyId: string,
  ): Promise<{ key: ApiKeyRecord; project: ProjectRecord }> {
    const key = await this.store.accounts.getKey(keyId);
    const project = key ? await this.store.accounts.getProject(key.projectId) : null;
    if (!key || !project || project.accountId !== account.id) throw notFound('API key');
    return { key, project };
  }

  async revoke(key: ApiKeyRecord): Promise<void> {
    await this.store.accounts.revokeKey(key.id, isoNow());
    this.cache.evictKey(key.id);
  }

  /**
   * Replace the key's rules (null: unrestricted), secret unchanged. Takes effect here at once and
   * on other instances within `auth.keyCacheMs`, as a revocation does (keyCache.ts).
   */
  async setRules(key: ApiKeyRecord, rules: KeyRule[] | null): Promise<ApiKeyRecord> {
    if (key.status !== 'active') throw notFound('Active API key');
    assertRulesWithinScope(rules, key.scope);
    const changed = await this.store.accounts.setKeyRules(key.id, rules);
    this.cache.rulesChanged(key.id);
    if (!changed) throw notFound('Active API key');
    return { ...key, rules };
  }

  /** New secret, same name, configuration, scope, rules and environment; the old secret dies now. */
  async rotate(key: ApiKeyRecord): Promise<{ apiKey: ApiKeyRecord; rawKey: string }> {
    if (key.status !== 'active') throw notFound('Active API key');
    const rawKey = generateApiKey(key.env);
    const apiKey = { ...this.record(key.projectId, rawKey, key), rotatedFrom: key.id };
    const rotated = await this.store.accounts.rotateKey(key.id, apiKey, isoNow());
    this.cache.evictKey(key.id);
    if (!rotated) throw notFound('Active API key');
    return { apiKey, rawKey };
  }

  /**
   * Resolve a raw key to its caller: the key, its project and account in one store round trip
   * (`resolveKey`), or none while the key cache holds them (see keyCache.ts for how soon a
   * revocation, rotation or plan change is seen: at once here, within `auth.keyCacheMs` on
   * other instances).
   */
  authenticate(rawKey: string | undefined): Promise<KeyContext> {
    // Not async itself: the look-up's own promise, not one wrapping it, on every request.
    if (!rawKey || !KEY_PATTERN.test(rawKey)) return Promise.reject(unauthorized());
    return this.authenticateHash(hashToken(rawKey));
  }

  /** As `authenticate`, from the key's hash (a stream ticket carries the hash, never the key). */
  async authenticateHash(keyHash: string): Promise<KeyContext> {
    let resolved = this.cache.get(keyHash);
    if (!resolved) {
      const generation = this.cache.generation;
      resolved = await this.store.accounts.resolveKey(keyHash);
      if (resolved?.key.status !== 'active') throw unauthorized('This API key is unknown or revoked.');
      this.cache.set(keyHash, resolved, generation);
    }
    let caller = this.#callers.get(resolved) ?? this.#callerOf(resolved);
    // Stamp `lastUsedAt` at most once a minute, in the background (best effort).
    const now = Date.now();
    if (!(now - caller.lastUsedMs <= TOUCH_INTERVAL_MS)) caller = this.#touch(keyHash, resolved, caller, now);
    return caller.context;
  }

  /**
   * The caller a look-up resolved to, made once per look-up (not per request) and shared by the
   * requests it serves: nothing changes a KeyContext once made. Kept as long as the look-up is
   * (the key cache's entry, or this request alone when the cache is off).
   */
  readonly #callers = new WeakMap<ResolvedKey, Caller>();

  // `access`: the rules compiled for an earlier look-up of the same key record (a touch changes
  // only `lastUsedAt`), so rules compile once per look-up of a key, not once a minute.
  #callerOf(resolved: ResolvedKey, access?: KeyAccess): Caller {
    const { key, project, account } = resolved;
    const caller = {
      context: {
        account,
        project,
        key,
        plan: account.plan,
        limits: this.config.plans[account.plan],
        scope: { projectId: project.id, env: key.env },
        access: access ?? compileKeyAccess(key.rules, key.scope),
      },
      lastUsedMs: key.lastUsedAt ? Date.parse(key.lastUsedAt) : Number.NEGATIVE_INFINITY,
    };
    this.#callers.set(resolved, caller);
    return caller;
  }

  #touch(keyHash: string, resolved: ResolvedKey, caller: Caller, now: number): Caller {
    const { key } = resolved;
    const at = isoNow(now);
    void this.store.accounts.touchKey(key.id, at).catch(() => {});
    const touched = { ...resolved, key: { ...key, lastUsedAt: at } };
    this.cache.refresh(keyHash, touched);
    return this.#callerOf(touched, caller.context.access);
  }

  /** The key may act only inside its own project. */
  assertProject(ctx: KeyContext, ns: string): void {
    if (ctx.project.name !== ns)
      throw forbidden(`This API key belongs to project "${ctx.project.name}", not "${ns}".`);
  }

  private record(
    projectId: string,
    rawKey: string,
    input: Pick<ApiKeyRecord, 'name' | 'env' | 'scope' | 'config' | 'rules'>,
  ): ApiKeyRecord {
    return {
      id: newId('key'),
      projectId,
      name: input.name,
      env: input.env,
      scope: input.scope,
      config: input.config,
      status: 'active',
      keyHash: hashToken(rawKey),
      hint: keyHint(rawKey),
      createdAt: isoNow(),
      lastUsedAt: null,
      revokedAt: null,
      rotatedFrom: null,
      rules: input.rules,
    };
  }
}

/** Scope is a ceiling: a read-only key cannot be given `write`. */
function assertRulesWithinScope(rules: readonly KeyRule[] | null, scope: KeyScope): void {
  if (scope !== 'read-only') return;
  const i = rules?.findIndex((rule) => rule.access === 'write') ?? -1;
  if (i !== -1) {
    throw badRequest(`rules[${i}].access: a read-only key cannot be given write access.`, {
      field: `rules.${i}.access`,
    });
  }
}
