/** Run the `folio` command as a user would (`node bin/folio.js ...`) and collect its output. */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

export interface CliResult {
  code: number | null;
  out: string;
  err: string;
}

export interface RunOptions {
  /** Run as this user and group (tests that need an unprivileged user while running as root). */
  uid?: number;
  gid?: number;
}

export async function runFolio(
  args: string[],
  env: Record<string, string>,
  options: RunOptions = {},
): Promise<CliResult> {
  const child = spawn(process.execPath, ['bin/folio.js', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...options,
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  // 'close', not 'exit': a child can exit before its piped output has all been read.
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, out, err };
}

export interface StartedFolio {
  /** The process spawned: node running `folio serve`, or npm when started `via: 'npm'`. */
  child: ChildProcess;
  /** stdout and stderr so far, interleaved. */
  output: () => string;
  /** stdout alone. */
  stdout: () => string;
  url: string;
}

export interface StartOptions {
  /** `node` runs `node bin/folio.js serve`; `npm` runs `npm start` (which runs the same). */
  via?: 'node' | 'npm';
  env?: Record<string, string>;
}

/** Start `folio serve` on `dataDir` on a free port and wait for its banner. */
export async function startFolio(dataDir: string, options: StartOptions = {}): Promise<StartedFolio> {
  const env = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    FOLIO_DATA_DIR: dataDir,
    FOLIO_LOG_LEVEL: 'silent',
    ...options.env,
  };
  const child =
    options.via === 'npm'
      ? spawn('npm', ['start'], { env, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(process.execPath, ['bin/folio.js', 'serve'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const deadline = Date.now() + 20_000;
  while (!/listening on (\S+)/.test(out) || !/(API key|Get an API key)/.test(out)) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`folio did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = (/listening on (\S+)/.exec(out) as RegExpExecArray)[1] as string;
  return { child, output: () => out, stdout: () => stdout, url };
}

/** SIGTERM the process and return its exit code. */
export async function stopFolio(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const [code] = await exited;
  return code as number | null;
}
