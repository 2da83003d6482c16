/** The `folio` command. */
import { ADMIN_USAGE, admin } from './admin.js';
import { serve } from './serve.js';
import { startupErrorReport } from './startupErrors.js';

const USAGE = `Usage: folio <command>

Commands:
  serve    Run the HTTP service (default). Configure with environment variables (see README).
${ADMIN_USAGE}
  help     Show this help.

Every command uses the store the environment selects (FOLIO_DATA_DIR, MONGODB_URI, ...).
`;

async function main(argv: string[]): Promise<void> {
  const [command = 'serve'] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'account':
    case 'project':
    case 'key':
      process.exitCode = await admin(argv);
      return;
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  process.stderr.write(`${startupErrorReport(err, process.env)}\n`);
  process.exit(1);
});
