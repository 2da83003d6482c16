/** The `folio` command. */
import { runtimeRefusal } from '../runtimeCheck.js';
import { ADMIN_USAGE, admin } from './admin.js';
import {
  BACKUP_HELP,
  BACKUP_USAGE,
  backupCommand,
  MIGRATE_HELP,
  migrateCommand,
  RESTORE_HELP,
  restoreCommand,
} from './backup/commands.js';
import { serve } from './serve.js';
import { startupErrorReport } from './startupErrors.js';
import { EXPORT_HELP, exportCommand } from './transfer/exportCommand.js';
import { IMPORT_HELP, importCommand } from './transfer/importCommand.js';
import { CommandFailure, UsageError } from './transfer/options.js';

const USAGE = `Usage: folio <command> [options]

Commands:
  serve    Run the HTTP service (npm start). Configure with environment variables (see README).
  import FILE
           Import a JSON, CSV or NDJSON file into a collection over HTTP (folio import --help).
  export   Export a collection as JSON, CSV or NDJSON over HTTP (folio export --help).
${ADMIN_USAGE}
${BACKUP_USAGE}
  help [COMMAND]
           Show this help, or a command's.

serve, backup, restore, migrate and the account/project/key commands use the store the
environment selects (FOLIO_DATA_DIR, MONGODB_URI, ...); import and export talk to a running
Folio (FOLIO_URL, FOLIO_API_KEY, FOLIO_PROJECT).
`;

const COMMAND_HELP = new Map([
  ['import', IMPORT_HELP],
  ['export', EXPORT_HELP],
  ['backup', BACKUP_HELP],
  ['restore', RESTORE_HELP],
  ['migrate', MIGRATE_HELP],
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
  // Help reads no data; everything else parses JSON and is refused on a faulty runtime.
  const refusal = HELP_COMMANDS.has(command) ? null : runtimeRefusal(process.env);
  if (refusal) {
    process.stderr.write(`folio: ${refusal}\n`);
    process.exitCode = 1;
    return;
  }
  switch (command) {
    case 'serve':
      return serve();
    case 'import':
      process.exitCode = await transfer(() => importCommand(rest, process.env));
      return;
    case 'export':
      process.exitCode = await transfer(() => exportCommand(rest, process.env));
      return;
    case 'backup':
      process.exitCode = await transfer(() => backupCommand(rest));
      return;
    case 'restore':
      process.exitCode = await transfer(() => restoreCommand(rest));
      return;
    case 'migrate':
      process.exitCode = await transfer(() => migrateCommand(rest));
      return;
    case 'account':
    case 'project':
    case 'key':
      process.exitCode = await admin(argv);
      return;
    default:
      if (HELP_COMMANDS.has(command)) {
        process.stdout.write(COMMAND_HELP.get(rest[0] ?? '') ?? USAGE);
        return;
      }
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${startupErrorReport(err, process.env)}\n`);
  process.exit(1);
});
