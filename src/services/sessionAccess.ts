/**
 * The dashboard works on a project's data with its owner's session instead of an API key: the
 * session-authenticated data routes (`/api/data/{env}/{ns}/...`) and the collection list resolve
 * the caller to the same `KeyContext` an API key gives, so every data service runs unchanged.
 * The context's key is the account's "dashboard key": never stored, read-write, rate-limited
 * per account at the plan's rate, and named in version history as `dashboard:<email>`.
 */
import type { Config } from '../config/schema.js';
import { invalidQuery, notFound } from '../errors.js';
import type { AccountRecord, ApiKeyRecord, Env, ProjectRecord } from '../store/port.js';
import type { AccountService } from './accounts.js';
import type { KeyContext } from './context.js';
import { compileKeyAccess } from './keyAccess.js';
import { hashToken } from './secrets.js';

/** Id prefix of dashboard keys (never an issued key's `key_`). */
export const DASHBOARD_KEY_PREFIX = 'dashboard:';

function isEnv(raw: unknown): raw is Env {
  return raw === 'live' || raw === 'test';
}

/** Whether a caller's key is a session's dashboard key rather than an issued API key. */
export function isDashboardKey(key: ApiKeyRecord): boolean {
  return key.id.startsWith(DASHBOARD_KEY_PREFIX);
}

/**
 * The account's dashboard key for one project environment. Its `keyHash` is the session's token
 * hash, so what outlives the request (an open change stream) can check the session still exists.
 */
export function dashboardKey(
  account: AccountRecord,
  project: ProjectRecord,
  env: Env,
  sessionToken: string,
): ApiKeyRecord {
  return {
    id: `${DASHBOARD_KEY_PREFIX}${account.id}`,
    projectId: project.id,
    name: 'dashboard session',
    env,
    scope: 'read-write',
    config: {},
    status: 'active',
    keyHash: hashToken(sessionToken),
    hint: `${DASHBOARD_KEY_PREFIX}${account.email}`,
    createdAt: account.createdAt,
    lastUsedAt: null,
    revokedAt: null,
    rotatedFrom: null,
    rules: null,
  };
}

export class SessionAccessService {
  constructor(
    private readonly config: Config,
    private readonly accounts: AccountService,
  ) {}

  /**
   * The caller context for the account's project `name` in `env` (path segments: an unknown
   * environment or another account's project is 404, as an unknown path).
   */
  async byProjectName(
    account: AccountRecord,
    sessionToken: string,
    name: string,
    env: string,
  ): Promise<KeyContext> {
    if (!isEnv(env)) throw notFound('Environment (live or test)');
    return this.contextFor(account, sessionToken, await this.accounts.ownProjectByName(account, name), env);
  }

  /** The same, for a project id and an `env` query parameter (403 for another account's project). */
  async byProjectId(
    account: AccountRecord,
    sessionToken: string,
    projectId: string,
    env: unknown,
  ): Promise<KeyContext> {
    if (!isEnv(env)) throw invalidQuery('env', 'must be live or test');
    return this.contextFor(
      account,
      sessionToken,
      await this.accounts.ownProjectById(account, projectId),
      env,
    );
  }

  private contextFor(
    account: AccountRecord,
    sessionToken: string,
    project: ProjectRecord,
    env: Env,
  ): KeyContext {
    return {
      account,
      project,
      key: dashboardKey(account, project, env, sessionToken),
      plan: account.plan,
      limits: this.config.plans[account.plan],
      scope: { projectId: project.id, env },
      access: compileKeyAccess(null, 'read-write'),
    };
  }
}
