/** `folio serve`: run the service until SIGTERM/SIGINT, then close cleanly. */
import { loadConfig, unknownFolioVariables } from '../config/load.js';
import { watchParent } from './parentWatch.js';

export async function serve(): Promise<void> {
  const config = loadConfig();
  for (const name of unknownFolioVariables(process.env)) {
    process.stderr.write(
      `warning: ${name} is not a Folio setting and is ignored (see README "Configuration")\n`,
    );
  }
  // Signals are taken from here on, before anything is printed: whoever reads the banner may stop
  // the server at once (a test, a supervisor), and without a handler that SIGTERM would end the
  // process on the spot, its store not closed and its pid file left behind. A signal while the
  // server starts closes it once started; a second one (a start waiting on an unreachable
  // MongoDB) exits at once.
  let stopReason: string | undefined;
  let closeRunning: ((reason: string) => void) | undefined;
  const stop = (reason: string) => {
    if (stopReason !== undefined) {
      if (!closeRunning) process.exit(1);
      return;
    }
    stopReason = reason;
    if (closeRunning) closeRunning(reason);
    else process.stderr.write(`${reason} while starting: closing once started (again: exit at once)\n`);
  };
  process.on('SIGTERM', () => stop('SIGTERM received'));
  process.on('SIGINT', () => stop('SIGINT received'));
  watchParent(() => stop('npm (the parent process) exited'));
  // The service's modules load only once the configuration holds: a bad value fails at once.
  const { startServer } = await import('../server.js');
  const running = await startServer(config);
  const out = process.stdout;
  out.write(`Folio is listening on ${running.url} (${running.storeDescription})\n`);
  out.write(`Dashboard: ${running.url}/dashboard/\n`);
  if (running.bootstrap) {
    const b = running.bootstrap;
    out.write(
      [
        '',
        'First start: created a dev account, project and test API key. They are shown ONCE; save them now.',
        `  login:    ${b.email} / ${b.password}`,
        `  project:  ${b.project}`,
        `  API key:  ${b.rawKey}`,
        '',
        'Try it:',
        `  curl -X POST ${running.url}/${b.project}/notes -H "Authorization: Bearer ${b.rawKey}" \\`,
        `       -H "Content-Type: application/json" -d '{"title":"hello"}'`,
        '',
      ].join('\n'),
    );
  } else {
    out.write(
      'Get an API key: log in (POST /api/auth/login) and create one (POST /api/keys), or on this machine\n' +
        '  node bin/folio.js key create --email <account> --project <name> --env test\n' +
        '(node bin/folio.js account create --email <you> makes an account and prints its password); see README "Accounts and keys".\n',
    );
  }
  closeRunning = (reason) => {
    out.write(`\n${reason}: closing...\n`);
    running
      .close()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        process.stderr.write(`error while closing: ${String(err)}\n`);
        process.exit(1);
      });
  };
  if (stopReason !== undefined) closeRunning(stopReason);
}
