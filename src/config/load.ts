/**
 * Configuration: `config/default.json`, then environment variables, validated with zod.
 * Every key `a.bKey` can be set as `FOLIO_A_B_KEY`; `PORT`, `HOST`, `FOLIO_DATA_DIR` and
 * `MONGODB_URI` are the short names operators expect.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type Config, configSchema } from './schema.js';

// `config/` sits at the package root: two levels up from src/config, three from the compiled
// dist/src/config.
const DEFAULTS_FILE = ['../../config/default.json', '../../../config/default.json']
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((file) => existsSync(file)) as string;

/** Short names that take precedence over the derived `FOLIO_*` names. */
export const ALIASES: Record<string, string> = {
  PORT: 'port',
  HOST: 'host',
  MONGODB_URI: 'mongodbUri',
};

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * The one-line form every configuration problem takes (the README promises one line naming the
 * variable): `Invalid configuration: PORT: expected a number, got "abc"`; several are joined by `; `.
 */
function invalid(problems: string[]): ConfigError {
  return new ConfigError(`Invalid configuration: ${problems.join('; ')}`);
}

type Tree = { [key: string]: unknown };

/** `plans.free.requestsPerSecond` → `FOLIO_PLANS_FREE_REQUESTS_PER_SECOND`. */
export function envName(path: string): string {
  return `FOLIO_${path
    .split('.')
    .map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
    .join('_')}`;
}

function leafPaths(tree: Tree, prefix = ''): string[] {
  return Object.entries(tree).flatMap(([key, value]) => {
    const path = prefix ? `${prefix}.${key}` : key;
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? leafPaths(value as Tree, path)
      : [path];
  });
}

function getPath(tree: Tree, path: string): unknown {
  return path.split('.').reduce<unknown>((node, key) => (node as Tree | undefined)?.[key], tree);
}

function setPath(tree: Tree, path: string, value: unknown): void {
  const keys = path.split('.');
  const last = keys.pop() as string;
  let node = tree;
  for (const key of keys) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Tree;
  }
  node[last] = value;
}

/** Read an environment string as the type of the default it overrides. */
function coerce(name: string, raw: string, like: unknown): unknown {
  if (typeof like === 'number') {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) throw invalid([`${name}: expected a number, got "${raw}"`]);
    return n;
  }
  if (typeof like === 'boolean') {
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw invalid([`${name}: expected true or false, got "${raw}"`]);
  }
  return raw;
}

function deepMerge(base: Tree, over: Tree): Tree {
  const out: Tree = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object'
        ? deepMerge(current as Tree, value as Tree)
        : value;
  }
  return out;
}

/**
 * `FOLIO_*` names that are not configuration keys but are read elsewhere: the HTTP client's
 * `FOLIO_URL` and `FOLIO_API_KEY`, the test suite's `FOLIO_REQUIRE_MONGODB`, the runtime check's
 * `FOLIO_ALLOW_FAULTY_JSON_PARSE` and the `folio` CLI's `FOLIO_PROJECT`.
 */
const OTHER_FOLIO_VARIABLES: ReadonlySet<string> = new Set([
  'FOLIO_URL',
  'FOLIO_API_KEY',
  'FOLIO_REQUIRE_MONGODB',
  'FOLIO_ALLOW_FAULTY_JSON_PARSE',
  'FOLIO_PROJECT',
]);

/**
 * The `FOLIO_*` variables of `env` that name no configuration key (a typo such as
 * `FOLIO_DATADIR` would otherwise be silently ignored), sorted. `serve` warns about each.
 */
export function unknownFolioVariables(env: NodeJS.ProcessEnv = process.env): string[] {
  const defaults = JSON.parse(readFileSync(DEFAULTS_FILE, 'utf8')) as Tree;
  const known = new Set(leafPaths(defaults).map(envName));
  return Object.keys(env)
    .filter((name) => name.startsWith('FOLIO_') && !known.has(name) && !OTHER_FOLIO_VARIABLES.has(name))
    .sort();
}

export type ConfigOverrides = { [key: string]: unknown };

/**
 * Load and validate. `overrides` (tests, CLI flags; several are merged in order) apply last.
 * Throws ConfigError naming the offending variable or key.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: ConfigOverrides | ConfigOverrides[] = {},
): Config {
  const defaults = JSON.parse(readFileSync(DEFAULTS_FILE, 'utf8')) as Tree;
  const tree = structuredClone(defaults);
  const sourceOf = new Map<string, string>();
  for (const path of leafPaths(defaults)) {
    const name = envName(path);
    const alias = Object.keys(ALIASES).find((a) => ALIASES[a] === path && env[a] !== undefined);
    const chosen = alias ?? (env[name] !== undefined ? name : undefined);
    if (chosen === undefined) continue;
    setPath(tree, path, coerce(chosen, env[chosen] as string, getPath(defaults, path)));
    sourceOf.set(path, chosen);
  }
  const merged = (Array.isArray(overrides) ? overrides : [overrides]).reduce(deepMerge, tree);
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    // Named by the variable that set the value, else by the variable that would set it (what
    // the README's table lists), never by the internal key.
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.join('.');
      const alias = Object.keys(ALIASES).find((a) => ALIASES[a] === path);
      const source = sourceOf.get(path) ?? alias ?? (path ? envName(path) : 'configuration');
      return `${source}: ${issue.message.replaceAll('\n', ' ')}`;
    });
    throw invalid(problems);
  }
  return parsed.data;
}
