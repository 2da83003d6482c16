/**
 * Change streams in `npm run bench`: write-to-event latency (p50/p99) with 1 and 1,000 concurrent
 * SSE subscribers, spread over 1 and over 100 collections, and the server's memory per idle
 * stream. The server runs here (embedded store); the subscribers and writers run in a forked
 * process (bench/streamClients.ts), so the load generator never competes inside the server's
 * event loop.
 *
 * Options (env): BENCH_STREAM_SUBSCRIBERS (1000), BENCH_STREAM_WRITES (100).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startTestServer } from '../test/support/server.js';
import type { ClientMessage, GeneratorMessage } from './streamClients.js';

const SUBSCRIBERS = Number(process.env.BENCH_STREAM_SUBSCRIBERS ?? 1000);
const WRITES = Number(process.env.BENCH_STREAM_WRITES ?? 100);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

/** A full collection, so memory deltas measure what stays. */
function collectGarbage(): () => void {
  setFlagsFromString('--expose_gc');
  return runInNewContext('gc') as () => void;
}

export async function runStreamBench(): Promise<void> {
  const gc = collectGarbage();
  const server = await startTestServer({
    config: { streams: { maxPerKey: SUBSCRIBERS + 10, bufferLimit: 10_000 } },
  });
  const generator = fork(fileURLToPath(new URL('./streamClients.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
  });
  const ask = async (message: ClientMessage): Promise<GeneratorMessage> => {
    const reply = once(generator, 'message') as Promise<[GeneratorMessage]>;
    generator.send(message);
    const [answer] = await reply;
    if (answer.type === 'error') throw new Error(answer.message);
    return answer;
  };
  const rows: Array<{ scenario: string; samples: number; p50: number; p99: number }> = [];
  let perStream = { heapBytes: 0, rssBytes: 0 };
  try {
    const tenant = await server.tenant({ plan: 'pro' });
    const scenarios: Array<[string, number, number]> = [
      ['1 subscriber, 1 collection', 1, 1],
      [`${SUBSCRIBERS} subscribers, 1 collection`, SUBSCRIBERS, 1],
      [`${SUBSCRIBERS} subscribers, 100 collections`, SUBSCRIBERS, 100],
    ];
    for (const [name, subscribers, collections] of scenarios) {
      const measureMemory = subscribers === SUBSCRIBERS && collections === 1;
      gc();
      const before = process.memoryUsage();
      await ask({
        type: 'open',
        url: server.url,
        key: tenant.key,
        project: tenant.project,
        subscribers,
        collections,
      });
      if (measureMemory) {
        gc();
        const after = process.memoryUsage();
        perStream = {
          heapBytes: (after.heapUsed + after.external - before.heapUsed - before.external) / subscribers,
          rssBytes: (after.rss - before.rss) / subscribers,
        };
      }
      // Warm-up, then the measured writes.
      await ask({ type: 'run', writes: Math.min(10, WRITES) });
      const done = await ask({ type: 'run', writes: WRITES });
      if (done.type !== 'done') throw new Error('unexpected reply');
      const sorted = done.latenciesMs.sort((a, b) => a - b);
      rows.push({
        scenario: name,
        samples: sorted.length,
        p50: percentile(sorted, 50),
        p99: percentile(sorted, 99),
      });
      await ask({ type: 'close' });
    }
  } finally {
    generator.kill();
    await server.close();
  }
  const out = process.stdout;
  out.write(`\nFolio bench: change streams (SSE), embedded store, ${WRITES} writes per scenario\n\n`);
  out.write(
    `${'write-to-event latency'.padEnd(40)}${'events'.padStart(8)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}\n`,
  );
  for (const r of rows) {
    out.write(
      `${r.scenario.padEnd(40)}${String(r.samples).padStart(8)}${r.p50.toFixed(2).padStart(10)}${r.p99.toFixed(2).padStart(10)}\n`,
    );
  }
  out.write(
    `\nserver memory per idle stream (${SUBSCRIBERS} streams): heap+external ${(perStream.heapBytes / 1024).toFixed(1)} KiB, RSS ${(perStream.rssBytes / 1024).toFixed(1)} KiB\n`,
  );
  if (process.env.BENCH_JSON) out.write(`${JSON.stringify({ streams: rows, perStream })}\n`);
}

// `node --import tsx bench/streams.ts` runs this part alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await runStreamBench();
