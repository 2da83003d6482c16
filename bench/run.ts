/**
 * `npm run bench`: query latency on a 100,000-document collection of the embedded store, each
 * query next to a plain `GET /{id}` measured in the same run, over real HTTP; declared indexes
 * (bench/indexes.ts) and their isolation between collections (bench/indexIsolation.ts); webhooks, import/export/bulk and change streams, each in a process of
 * its own (bench/webhooks.ts, bench/transfer.ts, bench/streams.ts); last, Folio beside bare
 * Koa, raw better-sqlite3, json-server and pouchdb-server (bench/peers.ts, which writes
 * docs/performance.md with the one-shot figures beside their baselines).
 *
 * Options (env): BENCH_DOCS (100000), BENCH_REQUESTS (at most 200 per query),
 * BENCH_QUERY_BUDGET_MS (5000: a query's requests stop then, once 20 are in), BENCH_JSON=1 for a
 * machine-readable line at the end.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { tenantScope } from '../test/support/scope.js';
import type { PeerHandoff } from './peers.js';
import { seedDocuments, startQueryBenchServer } from './seed.js';
import { percentile, QUERY_SAMPLES, sampleSequentially, samplesText } from './stats.js';

const DOCS = Number(process.env.BENCH_DOCS ?? 100_000);
const WORDS = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'haven', 'islet', 'juniper'];

/** Deterministic pseudo-random numbers so every run measures the same data. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const benchStartedMs = performance.now();
/** How long each part of the run took, for the report (its target: the whole in ~10 min). */
const phases: Array<[string, number]> = [];
let phaseStartedMs = benchStartedMs;
const phaseDone = (name: string) => {
  const now = performance.now();
  phases.push([name, now - phaseStartedMs]);
  phaseStartedMs = now;
};
// This table is the cost of queries on fields nobody indexed; bench/indexes.ts measures indexes.
const server = await startQueryBenchServer();
try {
  const tenant = await server.tenant({ plan: 'team' });
  const { store } = server.running.services;
  const scope = await tenantScope(server, tenant);

  const random = rng(42);
  const seedStart = performance.now();
  const ids = await seedDocuments(store, scope, 'bench', DOCS, (i) => ({
    n: i,
    category: `cat-${Math.floor(random() * 50)}`,
    price: Math.round(random() * 100_000) / 100,
    name: `${WORDS[Math.floor(random() * WORDS.length)]} ${WORDS[Math.floor(random() * WORDS.length)]} ${i}`,
    tags: [WORDS[i % WORDS.length] as string],
    address: { city: `city-${i % 200}` },
  }));
  const seedMs = performance.now() - seedStart;

  const base = `/${tenant.project}/bench`;
  const get = async (path: string): Promise<number> => {
    const t0 = performance.now();
    const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${tenant.key}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    return performance.now() - t0;
  };

  const queries: Array<[string, () => string]> = [
    ['GET /{id}', () => `${base}/${ids[Math.floor(random() * ids.length)]}`],
    ['equality filter', () => `${base}?filter[category]=cat-${Math.floor(random() * 50)}&limit=20`],
    [
      'range + sort + limit 20',
      () => `${base}?filter[price][gte]=${Math.floor(random() * 900)}&sort=-$createdAt&limit=20`,
    ],
    [
      'contains filter',
      () => `${base}?filter[name][contains]=${WORDS[Math.floor(random() * WORDS.length)]}&limit=20`,
    ],
    ['count', () => `${base}?count=true&filter[category]=cat-${Math.floor(random() * 50)}`],
    [
      'sort by $updatedAt, deep page',
      () => `${base}?sort=$updatedAt&offset=${Math.floor(random() * 5000)}&limit=20`,
    ],
  ];

  const rows: Array<{ query: string; p50: number; p99: number; mean: number }> = [];
  for (const [name, path] of queries) {
    for (let i = 0; i < 10; i++) await get(path()); // warm-up
    const samples = await sampleSequentially(() => get(path()), QUERY_SAMPLES);
    rows.push({
      query: name,
      p50: percentile(samples, 50),
      p99: percentile(samples, 99),
      mean: samples.reduce((a, b) => a + b, 0) / samples.length,
    });
  }

  const out = process.stdout;
  out.write(
    `\nFolio bench: embedded store, no declared or automatic indexes, ${DOCS.toLocaleString('en')} documents, ${samplesText(QUERY_SAMPLES)}\n`,
  );
  out.write(
    `seeded in ${(seedMs / 1000).toFixed(1)} s (${Math.round(DOCS / (seedMs / 1000)).toLocaleString('en')} docs/s through the port)\n\n`,
  );
  out.write(
    `${'query'.padEnd(32)}${'p50 ms'.padStart(10)}${'p99 ms'.padStart(10)}${'mean ms'.padStart(10)}\n`,
  );
  for (const r of rows) {
    out.write(
      `${r.query.padEnd(32)}${r.p50.toFixed(2).padStart(10)}${r.p99.toFixed(2).padStart(10)}${r.mean.toFixed(2).padStart(10)}\n`,
    );
  }
  out.write(`\nRSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB\n`);
  if (process.env.BENCH_JSON) out.write(`${JSON.stringify({ docs: DOCS, seedMs, rows })}\n`);
} finally {
  await server.close();
}
phaseDone('queries');

// Declared indexes before/after, build time and write cost (bench/indexes.ts), on their own server.
const { runIndexBench } = await import('./indexes.js');
await runIndexBench();
phaseDone('indexes');
const { runIndexIsolationBench } = await import('./indexIsolation.js');
await runIndexIsolationBench();
phaseDone('index isolation');
// The one-shot benches, each in a process of its own; their JSON lines feed the peer report.
const { runChildBench } = await import('./workloads/childBench.js');
// Webhook deliveries (bench/webhooks.ts).
const webhooks = await runChildBench('bench/webhooks.ts');
phaseDone('webhooks');
// Import, export and bulk: `folio serve` in a process of its own (bench/transfer.ts).
const transfer = await runChildBench('bench/transfer.ts');
phaseDone('import/export/bulk');
// Change streams: their own server and load-generator process (bench/streams.ts).
const streams = await runChildBench('bench/streams.ts');
phaseDone('change streams');
// Folio beside bare Koa, raw better-sqlite3, json-server and pouchdb-server, each in its own
// process (bench/peers.ts); writes docs/performance.md with the figures above beside baselines.
// The load comes from a fresh process too: run here, after the parts above (100,000 documents
// seeded through the port in this process), autocannon handed the servers smaller batches and
// every Folio workload cost more with each round (GET 36-40 µs of CPU, against 27-31 from a
// fresh process on the same machine, raw better-sqlite3's unchanged).
const handoff = join(await mkdtemp(join(tmpdir(), 'folio-bench-')), 'handoff.json');
const handed: PeerHandoff = {
  folioSide: { webhooks, transfer, streams },
  elapsedMs: performance.now() - benchStartedMs,
  phases,
};
await writeFile(handoff, JSON.stringify(handed));
const peers = spawn(process.execPath, ['--import', 'tsx', 'bench/peers.ts'], {
  cwd: fileURLToPath(new URL('../', import.meta.url)),
  env: { ...process.env, PEERS_HANDOFF: handoff },
  stdio: 'inherit',
});
const [code] = (await once(peers, 'exit')) as [number | null];
await rm(dirname(handoff), { recursive: true, force: true });
if (code !== 0) throw new Error(`bench/peers.ts exited with ${code}`);
