/**
 * Runs one of the Folio-only benches (bench/transfer.ts, bench/streams.ts, bench/webhooks.ts)
 * in a process of its own with BENCH_JSON=1: its report goes to our stdout as it comes, and
 * its machine-readable last line is handed to the peer report, so those figures stand in the
 * same table as the baselines measured in the same run.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export async function runChildBench(script: string): Promise<Record<string, unknown>> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, BENCH_JSON: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    process.stdout.write(chunk);
  });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  const last = output
    .trim()
    .split('\n')
    .reverse()
    .find((line) => line.startsWith('{'));
  if (!last) throw new Error(`${script} printed no JSON line`);
  return JSON.parse(last) as Record<string, unknown>;
}
