/**
 * `folio serve` in a process of its own, for suites that must kill or restart the server and
 * for benchmarks that measure its memory alone; `spawnListening` starts any such server (the
 * benches' raw better-sqlite3 one too).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

export interface FolioProcess {
  child: ChildProcess;
  url: string;
}

/**
 * Start it with `env` on a free port; resolves with its URL once it listens. `nodeArgs`: extra
 * node arguments (a benchmark's `--cpu-prof`, which NODE_OPTIONS does not take).
 */
export function serveFolio(env: Record<string, string>, nodeArgs: string[] = []): Promise<FolioProcess> {
  return spawnListening('folio serve', [...nodeArgs, 'bin/folio.js', 'serve'], {
    PORT: '0',
    HOST: '127.0.0.1',
    FOLIO_LOG_LEVEL: 'silent',
    FOLIO_BOOTSTRAP: 'false',
    ...env,
  });
}

/**
 * A node process of `args` with `env` added to this one's; resolves with its URL once its output
 * says `listening on <url>` (folio serve, and the benches' raw better-sqlite3 server).
 */
export function spawnListening(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<FolioProcess> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Keep reading its output to the end: a closed pipe would kill it on its next write.
  let output = '';
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      output += String(chunk);
      const url = /listening on (\S+)/.exec(output)?.[1];
      if (url) resolve({ child, url });
    });
    child.once('exit', () => reject(new Error(`${name} exited: ${output}`)));
  });
}

/** Stop it with `signal` (SIGKILL: as a crash would) and wait for it to be gone. */
export async function stopFolio(server: FolioProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  await exited;
}
