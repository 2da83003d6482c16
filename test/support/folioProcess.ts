/**
 * `folio serve` in a process of its own, as a user starts it (`node bin/folio.js serve` or
 * `npm start`): for suites that must kill or restart the server, read what it prints, or measure
 * its memory alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

export interface FolioProcess {
  /** The process spawned: node running `folio serve`, or npm when started `via: 'npm'`. */
  child: ChildProcess;
  url: string;
  /** stdout and stderr so far, interleaved. */
  output: () => string;
  /** stdout alone. */
  stdout: () => string;
}

export interface ServeOptions {
  /** `node` runs `node bin/folio.js serve`; `npm` runs `npm start` (which runs the same). */
  via?: 'node' | 'npm';
  /** Extra node arguments (a benchmark's `--cpu-prof`, which NODE_OPTIONS does not take). */
  nodeArgs?: string[];
}

/** How long a start may take before it counts as failed (and the process is killed). */
const START_MS = 20_000;

/**
 * `folio serve` spawned with `env` (FOLIO_DATA_DIR...) on a free port, its output collected from
 * the first byte; nothing waited for (serveFolio waits for its URL).
 */
export function spawnFolio(
  env: Record<string, string>,
  options: ServeOptions = {},
): Omit<FolioProcess, 'url'> {
  const childEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    FOLIO_LOG_LEVEL: 'silent',
    ...env,
  };
  const stdio: ['ignore', 'pipe', 'pipe'] = ['ignore', 'pipe', 'pipe'];
  const child =
    options.via === 'npm'
      ? spawn('npm', ['start'], { env: childEnv, stdio })
      : spawn(process.execPath, [...(options.nodeArgs ?? []), 'bin/folio.js', 'serve'], {
          env: childEnv,
          stdio,
        });
  // Keep reading its output to the end: a closed pipe would kill it on its next write.
  let out = '';
  let stdout = '';
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    stdout += chunk.toString();
  });
  return { child, output: () => out, stdout: () => stdout };
}

/**
 * Start it with `env` (FOLIO_DATA_DIR...) on a free port; resolves once it printed its URL and
 * the banner after it (the first start's dev key, or how to get one).
 */
export function serveFolio(env: Record<string, string>, options: ServeOptions = {}): Promise<FolioProcess> {
  const started = spawnFolio(env, options);
  const { child } = started;
  return new Promise((resolve, reject) => {
    let waiting = true;
    const fail = (why: string) => {
      if (!waiting) return;
      waiting = false;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`folio serve ${why}:\n${started.output()}`));
    };
    const timer = setTimeout(() => fail(`did not start in ${START_MS} ms`), START_MS);
    child.once('exit', () => fail('exited'));
    child.stdout?.on('data', () => {
      if (!waiting) return;
      const out = started.output();
      const url = /listening on (\S+)/.exec(out)?.[1];
      if (url && /(API key|Get an API key)/.test(out)) {
        waiting = false;
        clearTimeout(timer);
        resolve({ ...started, url });
      }
    });
  });
}

/** Stop it with `signal` (SIGKILL: as a crash would), wait for it to be gone; its exit code. */
export async function stopFolio(
  server: { child: ChildProcess },
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<number | null> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill(signal);
  const [code] = await exited;
  return code as number | null;
}

export interface DevAccount {
  email: string;
  password: string;
  project: string;
  /** Its test API key. */
  key: string;
}

/** The dev account a first start printed (login, project, test key); throws when it printed none. */
export function devAccount(server: FolioProcess): DevAccount {
  const output = server.output();
  const login = /login:\s+(\S+) \/ (\S+)/.exec(output);
  const project = /project:\s+(\S+)/.exec(output);
  const key = /API key:\s+(folio_sk_test_[0-9A-Za-z]{40})/.exec(output);
  if (!login || !project || !key) throw new Error(`no dev account in the output:\n${output}`);
  return { email: login[1]!, password: login[2]!, project: project[1]!, key: key[1]! };
}
