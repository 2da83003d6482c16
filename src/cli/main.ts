/** The `folio` command. */
import { ConfigError } from '../config/load.js';
import { StoreStartError } from '../store/port.js';
import { ADMIN_USAGE, admin } from './admin.js';
import { serve } from './serve.js';

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
  // Both say what is wrong and how to fix it; a stack trace would only bury that.
  if (err instanceof ConfigError || err instanceof StoreStartError) process.stderr.write(`${err.message}\n`);
  else if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
    process.stderr.write(
      `${(err as Error).message}: the port is taken; set PORT to another one (PORT=0 picks a free port).\n`,
    );
  } else process.stderr.write(`folio: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
