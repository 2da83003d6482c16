/**
 * Flags and environment shared by `folio import` and `folio export`: where the server is, which
 * key, project and collection. Flags win over FOLIO_URL, FOLIO_API_KEY and FOLIO_PROJECT.
 */
import { parseArgs } from 'node:util';
import { isTransferFormat, type TransferFormat } from '../../formats/formats.js';

/** A mistake in how the command was called: exit code 2 with the message and a hint. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The command ran but did not do all it should: exit code 1. */
export class CommandFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CommandFailure';
  }
}

export const CONNECTION_HELP = `Connection (flags, or the environment):
  --url URL            Folio's address (FOLIO_URL; default http://localhost:3000)
  --key KEY            API key (FOLIO_API_KEY)
  -p, --project NAME   project (FOLIO_PROJECT)
  -c, --collection C   collection`;

const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  project: { type: 'string', short: 'p' },
  collection: { type: 'string', short: 'c' },
  format: { type: 'string', short: 'f' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface Connection {
  url: string;
  key: string;
  project: string;
}

type ParseArgsOptions = NonNullable<Parameters<typeof parseArgs>[0]>['options'];

/** parseArgs with the connection flags plus the command's own; unknown flags are usage errors. */
export function parseCommandArgs<T extends ParseArgsOptions>(argv: string[], own: T) {
  try {
    return parseArgs({
      args: argv,
      options: { ...CONNECTION_OPTIONS, ...own },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

export function connection(
  values: { url?: unknown; key?: unknown; project?: unknown },
  env: NodeJS.ProcessEnv,
): Connection {
  const url = String(values.url ?? env.FOLIO_URL ?? 'http://localhost:3000').replace(/\/+$/, '');
  const key = values.key ?? env.FOLIO_API_KEY;
  const project = values.project ?? env.FOLIO_PROJECT;
  if (typeof key !== 'string' || key === '')
    throw new UsageError('an API key is needed: --key or FOLIO_API_KEY');
  if (typeof project !== 'string' || project === '')
    throw new UsageError('a project is needed: --project or FOLIO_PROJECT');
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url is not a URL: ${url}`);
  }
  return { url, key, project };
}

export function formatOption(value: unknown): TransferFormat | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !isTransferFormat(value)) {
    throw new UsageError(`--format must be json, csv or ndjson, not ${String(value)}`);
  }
  return value;
}
