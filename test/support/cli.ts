/** Run the `folio` command as a user would (`node bin/folio.js ...`) and collect its output. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export interface CliResult {
  code: number | null;
  out: string;
  err: string;
}

export async function runFolio(args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(process.execPath, ['bin/folio.js', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, out, err };
}
