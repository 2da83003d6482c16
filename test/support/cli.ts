/** Run the `folio` command as a user would (`node bin/folio.js ...`) and collect its output. */
import { spawn } from 'node:child_process';
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
