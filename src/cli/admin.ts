/**
 * `folio account|project|key create` and `folio key rules`: operator commands that work on the configured store
 * directly, whatever `auth.signup` says: the CLI can always create accounts and keys. Secrets
 * are printed once, like the HTTP API shows them once.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '../config/load.js';
import { AppError } from '../errors.js';
import { credentialsSchema, projectNameSchema } from '../services/accounts.js';
import { createKeySchema, updateKeySchema } from '../services/apiKeys.js';
import { createServices, type Services } from '../services/index.js';
import { openStore } from '../store/open.js';
import type { AccountRecord, KeyRule } from '../store/port.js';

const PLANS = ['free', 'pro', 'team'] as const;

class UsageError extends Error {}

function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name];
  if (!value) throw new UsageError(`--${name} is required`);
  return value;
}

async function accountByEmail(services: Services, email: string): Promise<AccountRecord> {
  const account = await services.store.accounts.findAccountByEmail(email.toLowerCase());
  if (!account) throw new UsageError(`no account with email ${email}`);
  return account;
}

/**
 * `--rules JSON` or `--rules-file FILE` (a key's rules: docs/keys.md), as parsed JSON; undefined
 * when neither is given. The schema that takes them checks their shape.
 */
function rulesOption(values: Record<string, string | undefined>): unknown {
  if (values.rules !== undefined && values['rules-file'] !== undefined)
    throw new UsageError('give --rules or --rules-file, not both');
  const file = values['rules-file'];
  const text = file === undefined ? values.rules : readFileSync(file, 'utf8');
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${file ?? '--rules'} is not valid JSON`);
  }
}

function rulesLine(rules: KeyRule[] | null): string {
  return rules === null ? ' without rules' : ` with rules ${JSON.stringify(rules)}`;
}

type Command = (services: Services, values: Record<string, string | undefined>) => Promise<string>;

const COMMANDS: Record<string, Command> = {
  'account create': async (services, values) => {
    const generated = values.password === undefined;
    const password = values.password ?? randomBytes(12).toString('base64url');
    const input = credentialsSchema.parse({ email: required(values, 'email'), password });
    const plan = values.plan ?? 'free';
    if (!PLANS.includes(plan as (typeof PLANS)[number]))
      throw new UsageError('--plan must be free, pro or team');
    const { account } = await services.accounts.signup(input, {
      force: true,
      plan: plan as (typeof PLANS)[number],
    });
    return [
      `account ${account.id} ${account.email} (${account.plan})`,
      ...(generated ? [`password: ${password}   (shown once)`] : []),
    ].join('\n');
  },
  'project create': async (services, values) => {
    const account = await accountByEmail(services, required(values, 'email'));
    const project = await services.accounts.createProject(account, projectNameSchema.parse(values.name));
    return `project ${project.id} ${project.name}`;
  },
  'key create': async (services, values) => {
    const account = await accountByEmail(services, required(values, 'email'));
    const input = createKeySchema.parse({
      project: required(values, 'project'),
      name: values.name ?? 'CLI key',
      env: values.env ?? 'test',
      scope: values.scope ?? 'read-write',
      rules: rulesOption(values),
    });
    const project = await services.accounts.ownProjectByName(account, input.project);
    const { apiKey, rawKey } = await services.apiKeys.create(account, project, input);
    return `key ${apiKey.id} ${apiKey.env} ${apiKey.scope} for project ${project.name}${rulesLine(apiKey.rules)}\n${rawKey}   (shown once)`;
  },
  // A server running on the same store sees the change within `auth.keyCacheMs`.
  'key rules': async (services, values) => {
    const account = await accountByEmail(services, required(values, 'email'));
    const rules = rulesOption(values);
    if (rules === undefined) throw new UsageError('--rules or --rules-file is required (null removes them)');
    const input = updateKeySchema.parse({ rules });
    const { key } = await services.apiKeys.ownKey(account, required(values, 'key'));
    const updated = await services.apiKeys.setRules(key, input.rules);
    return `key ${updated.id}${rulesLine(updated.rules)}`;
  },
};

/** Run one admin command; returns the process exit code. */
export async function admin(argv: string[]): Promise<number> {
  const [noun, verb, ...rest] = argv;
  const command = COMMANDS[`${noun} ${verb}`];
  if (!command) {
    process.stderr.write(`Unknown command "${[noun, verb].filter(Boolean).join(' ')}".\n`);
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: Object.fromEntries(
      ['email', 'password', 'plan', 'name', 'project', 'env', 'scope', 'key', 'rules', 'rules-file'].map(
        (o) => [o, { type: 'string' as const }],
      ),
    ),
  });
  const config = loadConfig();
  // No data-directory lock: these commands must work beside a running embedded server.
  const opened = await openStore(config, { lockDataDir: false });
  try {
    const output = await command(
      createServices(opened.store, config),
      values as Record<string, string | undefined>,
    );
    process.stdout.write(`${output}\n`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError || err instanceof AppError) {
      process.stderr.write(`${err.message}\n`);
      return err instanceof UsageError ? 2 : 1;
    }
    if (err instanceof z.ZodError) {
      process.stderr.write(`${z.prettifyError(err)}\n`);
      return 2;
    }
    throw err;
  } finally {
    await opened.stop();
  }
}
