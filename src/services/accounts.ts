/** Accounts, sessions and projects: the session-authenticated side of Folio. */
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { AppError, badRequest, conflict, forbidden, notFound, unauthorized } from '../errors.js';
import { isoNow, newId } from '../ids.js';
import {
  type AccountRecord,
  DuplicateError,
  type Plan,
  type ProjectRecord,
  type Store,
} from '../store/port.js';
import type { KeyCache } from './keyCache.js';
import type { ProjectSettings } from './projectSettings.js';
import { generateSessionToken, hashPassword, hashToken, verifyPassword } from './secrets.js';
import { SignInThrottle } from './signInThrottle.js';

export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** First path segments Folio itself uses; a project of that name could never be reached. */
export const RESERVED_PROJECT_NAMES = new Set([
  'api',
  'healthz',
  'readyz',
  'metrics',
  'docs',
  'openapi.json',
  'dashboard',
]);

export const credentialsSchema = z.strictObject({
  email: z.email().max(254),
  password: z.string().min(8, 'password must have at least 8 characters').max(1024),
});

export const projectNameSchema = z
  .string()
  .regex(NAME_PATTERN, 'project names are 1-64 letters, digits, _ or -, starting with a letter or digit')
  .refine((name) => !RESERVED_PROJECT_NAMES.has(name.toLowerCase()), 'this project name is reserved');

export interface PublicAccount {
  id: string;
  email: string;
  plan: Plan;
  createdAt: string;
}

export function publicAccount(a: AccountRecord): PublicAccount {
  return { id: a.id, email: a.email, plan: a.plan, createdAt: a.createdAt };
}

export function publicProject(p: ProjectRecord) {
  return {
    id: p.id,
    name: p.name,
    createdAt: p.createdAt,
    allowedOrigins: p.allowedOrigins,
    autoIndexes: p.autoIndexes ?? null,
  };
}

export class AccountService {
  /** Failed logins and signups per email and client address (signInThrottle.ts). */
  readonly throttle: SignInThrottle;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly keyCache: KeyCache,
  ) {
    this.throttle = new SignInThrottle(config.auth);
  }

  /**
   * Create an account (open signup, or the CLI/bootstrap with `force`). `address`, the client's
   * address, counts the attempt toward its signup limit (HTTP signups only).
   */
  async signup(
    input: { email: string; password: string },
    options: { force?: boolean; plan?: Plan; address?: string } = {},
  ): Promise<{ account: AccountRecord; token: string }> {
    if (options.address !== undefined) this.throttle.signupAttempt(options.address);
    if (this.config.auth.signup === 'closed' && !options.force) {
      throw new AppError(
        403,
        'signup_closed',
        'Signup is closed on this server; ask an operator for an account.',
      );
    }
    const account: AccountRecord = {
      id: newId('acc'),
      email: input.email.toLowerCase(),
      passwordHash: await hashPassword(input.password),
      plan: options.plan ?? 'free',
      createdAt: isoNow(),
    };
    try {
      await this.store.accounts.createAccount(account);
    } catch (err) {
      if (err instanceof DuplicateError) throw conflict('An account with this email already exists.');
      throw err;
    }
    return { account, token: await this.openSession(account.id) };
  }

  /** Log in from the client at `address`; 429 once the email or the address failed too often. */
  async login(
    input: { email: string; password: string },
    address: string,
  ): Promise<{ token: string; account: AccountRecord }> {
    this.throttle.beginLogin(input.email, address);
    const account = await this.store.accounts.findAccountByEmail(input.email.toLowerCase());
    // Verify even for unknown emails so timing does not reveal which emails exist.
    const ok = await verifyPassword(input.password, account?.passwordHash ?? (await dummyHash()));
    if (!account || !ok) throw unauthorized('Email or password is wrong.');
    this.throttle.loginSucceeded(input.email, address);
    return { token: await this.openSession(account.id), account };
  }

  async logout(token: string): Promise<void> {
    const sessionHash = hashToken(token);
    await this.store.accounts.deleteSession(sessionHash);
    this.keyCache.sessionEnded(sessionHash);
  }

  /** The account behind a session token, or a 401. */
  async authenticateSession(token: string): Promise<AccountRecord> {
    const session = await this.store.accounts.findSession(hashToken(token), isoNow());
    const account = session ? await this.store.accounts.getAccount(session.accountId) : null;
    if (!account)
      throw unauthorized(
        'A valid session is required (cookie folio_session or Authorization: Bearer <session>).',
      );
    return account;
  }

  async setPlan(account: AccountRecord, plan: Plan): Promise<AccountRecord> {
    await this.store.accounts.setPlan(account.id, plan);
    // The account's keys carry its plan's limits: this instance applies the new plan at once.
    this.keyCache.evictAccount(account.id);
    return { ...account, plan };
  }

  async createProject(account: AccountRecord, name: string): Promise<ProjectRecord> {
    const project: ProjectRecord = {
      id: newId('prj'),
      accountId: account.id,
      name,
      createdAt: isoNow(),
      allowedOrigins: null,
    };
    try {
      await this.store.accounts.createProject(project);
    } catch (err) {
      if (err instanceof DuplicateError) throw conflict(`You already have a project named "${name}".`);
      throw err;
    }
    return project;
  }

  listProjects(account: AccountRecord): Promise<ProjectRecord[]> {
    return this.store.accounts.listProjects(account.id);
  }

  /** Set the browser origins allowed to use the project's keys (null: the default policy). */
  async setAllowedOrigins(
    account: AccountRecord,
    projectId: string,
    origins: string[] | null,
  ): Promise<ProjectRecord> {
    const project = await this.ownProjectById(account, projectId);
    await this.store.accounts.setAllowedOrigins(project.id, origins);
    // Cached key look-ups carry their project: this instance applies the new origins at once.
    this.keyCache.evictAccount(account.id);
    return { ...project, allowedOrigins: origins };
  }

  /** Apply the settings the body names (projectSettings.ts); the others stay as they are. */
  async updateProjectSettings(
    account: AccountRecord,
    projectId: string,
    settings: ProjectSettings,
  ): Promise<ProjectRecord> {
    let project = await this.ownProjectById(account, projectId);
    if (settings.allowedOrigins !== undefined) {
      project = await this.setAllowedOrigins(account, project.id, settings.allowedOrigins);
    }
    if (settings.autoIndexes !== undefined) {
      await this.store.accounts.setAutoIndexes(project.id, settings.autoIndexes);
      // Cached key look-ups carry their project: this instance applies the setting at once.
      this.keyCache.evictAccount(account.id);
      project = { ...project, autoIndexes: settings.autoIndexes };
    }
    return project;
  }

  /** A project of the account, by name; 404 for others' projects too (no existence leak). */
  async ownProjectByName(account: AccountRecord, name: string): Promise<ProjectRecord> {
    if (typeof name !== 'string' || name === '') throw badRequest('project is required.');
    const project = await this.store.accounts.findProject(account.id, name);
    if (!project) throw notFound('Project');
    return project;
  }

  /** A project by id that must belong to the account. */
  async ownProjectById(account: AccountRecord, id: string): Promise<ProjectRecord> {
    const project = await this.store.accounts.getProject(id);
    if (!project) throw notFound('Project');
    if (project.accountId !== account.id) throw forbidden('This project belongs to another account.');
    return project;
  }

  private async openSession(accountId: string): Promise<string> {
    const token = generateSessionToken();
    const now = Date.now();
    await this.store.accounts.createSession({
      tokenHash: hashToken(token),
      accountId,
      createdAt: isoNow(now),
      expiresAt: isoNow(now + this.config.auth.sessionTtlHours * 3_600_000),
    });
    return token;
  }
}

// A valid scrypt hash of a random password, used to equalise login timing. Made on the first
// login of an unknown email rather than at start-up.
let dummy: Promise<string> | undefined;
function dummyHash(): Promise<string> {
  dummy ??= hashPassword(`dummy-${Math.random()}`);
  return dummy;
}
