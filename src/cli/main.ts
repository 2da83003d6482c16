/**
 * The `folio` command. Each command's module is imported only when that command runs: `serve`
 * loads the whole service (Koa, both stores' drivers, Agenda, prom-client), which `import` and
 * `export`, HTTP clients of a running Folio, never need.
 */
import { runtimeRefusal } from '../runtimeCheck.js';
import { CommandFailure, UsageError } from './transfer/options.js';

const USAGE = `Usage: folio <command> [options]

Commands:
  serve    Run the HTTP service (npm start). Configure with environment variables (see README).
  import FILE
           Import a JSON, CSV or NDJSON file into a collection over HTTP (folio import --help).
  export   Export a collection as JSON, CSV or NDJSON over HTTP (folio export --help).
  account create --email E [--password P] [--plan free|pro|team]
           Create an account (a password is generated and printed when not given).
  project create --email E --name N
           Create a project for an account.
  key create --email E --project N [--env test|live] [--scope read-write|read-only] [--name NAME]
             [--rules JSON | --rules-file FILE]
           Create an API key and print it once; rules limit what it reaches (docs/keys.md).
  key rules --email E --key KEY_ID (--rules JSON | --rules-file FILE)
           Replace a key's rules (null removes them); its secret stays the same.
  backup --out FILE [--gzip]
           Write a consistent snapshot of the store to FILE, while it runs (folio help backup).
  restore FILE
           Restore a backup into the store, which must be empty (folio help restore).
  migrate --to MONGODB_URI|DATA_DIR
           Copy the whole store into another, empty one; resumable (folio help migrate).
  help [COMMAND]
           Show this help, or a command's.

serve, backup, restore, migrate and the account/project/key commands use the store the
environment selects (FOLIO_DATA_DIR, MONGODB_URI, ...); import and export talk to a running
Folio (FOLIO_URL, FOLIO_API_KEY, FOLIO_PROJECT).
`;

const importModule = () => import('./transfer/importCommand.js');
const exportModule = () => import('./transfer/exportCommand.js');
const backupModule = () => import('./backup/commands.js');

/** Each command's exit code, computed by its module (loaded on use). */
const admin = async (argv: string[]) => (await import('./admin.js')).admin(argv);
const COMMANDS = new Map<string, (rest: string[], argv: string[]) => Promise<number>>([
  ['import', (rest) => transfer(async () => (await importModule()).importCommand(rest, process.env))],
  ['export', (rest) => transfer(async () => (await exportModule()).exportCommand(rest, process.env))],
  ['backup', (rest) => transfer(async () => (await backupModule()).backupCommand(rest))],
  ['restore', (rest) => transfer(async () => (await backupModule()).restoreCommand(rest))],
  ['migrate', (rest) => transfer(async () => (await backupModule()).migrateCommand(rest))],
  ['account', (_rest, argv) => admin(argv)],
  ['project', (_rest, argv) => admin(argv)],
  ['key', (_rest, argv) => admin(argv)],
]);

const COMMAND_HELP = new Map<string, () => Promise<string>>([
  ['import', async () => (await importModule()).IMPORT_HELP],
  ['export', async () => (await exportModule()).EXPORT_HELP],
  ['backup', async () => (await backupModule()).BACKUP_HELP],
  ['restore', async () => (await backupModule()).RESTORE_HELP],
  ['migrate', async () => (await backupModule()).MIGRATE_HELP],
]);

const HELP_COMMANDS = new Set(['help', '--help', '-h']);

/** Run a transfer command: usage mistakes exit 2, failures 1, both with one line on stderr. */
async function transfer(run: () => Promise<number>): Promise<number> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`folio: ${error.message} (see --help)\n`);
      return 2;
    }
    if (error instanceof CommandFailure) {
      process.stderr.write(`folio: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

async function main(argv: string[]): Promise<void> {
  // No command prints help: a second server started by accident is worse than a hint.
  const [command = 'help', ...rest] = argv;
  if (HELP_COMMANDS.has(command)) {
    // Help reads no data, so it runs even on a runtime refused below.
    const help = COMMAND_HELP.get(rest[0] ?? '');
    process.stdout.write(help ? await help() : USAGE);
    return;
  }
  const refusal = runtimeRefusal(process.env);
  if (refusal) {
    process.stderr.write(`folio: ${refusal}\n`);
    process.exitCode = 1;
    return;
  }
  if (command === 'serve') {
    // No exit code: the process lives until the server closes.
    return (await import('./serve.js')).serve();
  }
  const run = COMMANDS.get(command);
  if (!run) {
    process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  process.exitCode = await run(rest, argv);
}

main(process.argv.slice(2)).catch(async (err: unknown) => {
  const { startupErrorReport } = await import('./startupErrors.js');
  process.stderr.write(`${startupErrorReport(err, process.env)}\n`);
  process.exit(1);
});
