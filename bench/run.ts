/**
 * `npm run bench`: every workload, each part in a process of its own (one part's heap, JIT state
 * and leftover work never weigh on the next), then one report, docs/performance.md: the floors
 * of issue 42 judged, then each part's tables. `bench:scale` (1,000,000 documents) and
 * `bench:webhooks` (with the receiver-down backlog) stay scripts of their own.
 *
 * `npm run bench -- --profile`: every `folio serve` of the run under V8's profiler, its
 * `.cpuprofile` files kept in a folder the run names (the figures then include the profiler's
 * cost). BENCH_QUICK=1: a smoke run at small sizes, its report in test-output/performance.md.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { judgeFloors } from './floors.js';
import { ROOT } from './processes.js';
import { type Part, report } from './report.js';
import type { ThroughputRow } from './throughput.js';
import type { TransferFigures } from './transfer.js';
import { QUICK } from './workloads/rows.js';

const PARTS: ReadonlyArray<{ title: string; script: string; env?: Record<string, string> }> = [
  { title: 'Queries without an index', script: 'bench/queries.ts' },
  { title: 'Declared indexes', script: 'bench/indexes.ts' },
  { title: 'Webhook deliveries', script: 'bench/webhooks.ts', env: { BENCH_WEBHOOKS_BACKLOG: '0' } },
  { title: 'Import, export and bulk', script: 'bench/transfer.ts' },
  { title: 'Change streams', script: 'bench/streams.ts' },
  { title: 'Throughput beside the ceilings and Parse Server', script: 'bench/throughput.ts' },
];

/** Runs one part with BENCH_JSON=1: its text (markdown) as it comes, and its last line's figures. */
async function runPart(
  script: string,
  env: Record<string, string> = {},
): Promise<{ text: string; json: unknown }> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', script], {
    cwd: ROOT,
    env: { ...process.env, ...env, BENCH_JSON: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    process.stdout.write(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${script} exited with ${code}`);
  const lines = output.trimEnd().split('\n');
  const json = lines.at(-1)?.startsWith('{') ? JSON.parse(lines.pop() as string) : null;
  return { text: lines.join('\n').trim(), json };
}

const profileDir = process.argv.includes('--profile')
  ? await mkdtemp(join(tmpdir(), 'folio-profiles-'))
  : null;
if (profileDir) process.env.BENCH_PROFILE_DIR = profileDir;
const started = performance.now();
const parts: Part[] = [];
const figures: Record<string, unknown> = {};
for (const { title, script, env } of PARTS) {
  process.stderr.write(`\n== ${title} (${script})\n`);
  const partStarted = performance.now();
  const { text, json } = await runPart(script, env);
  parts.push({ title, script, text, minutes: (performance.now() - partStarted) / 60_000 });
  figures[script] = json;
}
const throughput = figures['bench/throughput.ts'] as { rows: ThroughputRow[]; parseSkipped?: string };
const verdicts = judgeFloors(
  throughput.rows,
  figures['bench/transfer.ts'] as TransferFigures,
  throughput.parseSkipped,
);
const minutes = (performance.now() - started) / 60_000;
const file = join(ROOT, QUICK ? 'test-output/performance.md' : 'docs/performance.md');
await mkdir(join(file, '..'), { recursive: true });
await writeFile(file, report({ parts, verdicts, minutes, profiled: profileDir !== null, quick: QUICK }));
process.stdout.write(`\nThe whole run took ${minutes.toFixed(1)} min; report: ${file}\n`);
if (profileDir) process.stdout.write(`CPU profiles of every folio serve: ${profileDir}\n`);
const failed = verdicts.filter((v) => v.pass === false).map((v) => v.floor);
if (failed.length > 0) process.stdout.write(`Floors missed: ${failed.join('; ')}\n`);
