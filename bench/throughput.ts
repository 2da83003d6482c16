/**
 * Throughput and server CPU per request: Folio (`folio serve` as in production), raw
 * better-sqlite3 and Parse Server on PostgreSQL, each in its own process, on GET by id, POST
 * create, PATCH merge, a filtered list and a count over 100,000 rows; autocannon from this
 * process, each round taking a workload's systems back to back, the median round with the spread
 * of the rounds (bench/report.ts says how to read them).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { benchKeys, call, folioTenant, type Server, startFolio, startRaw, stop } from './processes.js';
import { type Median, percent, summary } from './stats.js';
import { parseTargets, startParsePeer } from './workloads/parseServer.js';
import { processCpuTimes } from './workloads/processCpu.js';
import { BIG_DOCS, BODY, bigNdjson, categoryCycle, QUICK, sized } from './workloads/rows.js';
import {
  cycle,
  folioTargets,
  RESTRICTED,
  RESTRICTING_RULES,
  rawTargets,
  type Target,
  WORKLOADS,
} from './workloads/targets.js';

const CONNECTIONS = 32;
const SECONDS = sized(1.5, 0.5);
const ROUNDS = sized(6, 2);
const WARMUP_SECONDS = sized(1, 0.3);
const ITEMS = sized(1000, 100);
const KEYS = sized(100, 5);
/** Rows per Folio import request: the Team plan's import limit. */
const IMPORT_PART = 25_000;

export interface ThroughputRow {
  system: string;
  workload: string;
  requestsPerSecond: Median;
  cpuMicrosPerRequest: Median;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

type Round = Record<'requestsPerSecond' | 'cpuMicrosPerRequest' | 'p50Ms' | 'p99Ms' | 'failed', number>;

/** CPU time of the processes (all their threads), µs. */
function cpuOf(pids: readonly number[]): number {
  let sum = 0;
  for (const pid of pids) {
    const { userMs, systemMs } = processCpuTimes(pid);
    sum += (userMs + systemMs) * 1000;
  }
  return sum;
}

async function measure(target: Target, seconds: number, pid: number | undefined): Promise<Round> {
  const pids = target.cpuPids ? await target.cpuPids() : pid === undefined ? [] : [pid];
  const before = cpuOf(pids);
  const result = await autocannon({ ...target.options, connections: CONNECTIONS, duration: seconds });
  return {
    requestsPerSecond: result.requests.average,
    cpuMicrosPerRequest: (cpuOf(pids) - before) / result.requests.total,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failed: result.non2xx + result.errors,
  };
}

/** Folio with its 1,000 documents, the 100,000 rows of the list and count, their declared index. */
async function seedFolio(folio: Server, nextKey: () => string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < ITEMS; i++) {
    const text = await call(`${folio.url}/bench/items`, { body: { ...BODY, n: i }, key: nextKey() });
    ids.push((JSON.parse(text) as { _id: string })._id);
  }
  for (let start = 0; start < BIG_DOCS; start += IMPORT_PART) {
    const body = bigNdjson(start, Math.min(IMPORT_PART, BIG_DOCS - start));
    await call(`${folio.url}/bench/big/_import`, { body, key: nextKey(), type: 'application/x-ndjson' });
  }
  const index = { fields: [{ path: 'category' }, { path: 'price' }] };
  await call(`${folio.url}/bench/big/_indexes`, { body: index, key: nextKey() });
  return ids;
}

export async function runThroughput(): Promise<{ rows: ThroughputRow[]; parseSkipped?: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'folio-bench-throughput-'));
  const servers: Server[] = [];
  // Parse Server installs from npm and seeds its PostgreSQL while Folio seeds.
  const parsing = startParsePeer(dir, ITEMS).catch((error: Error) => ({ skip: error.message }));
  try {
    const folio = await startFolio(dir, 'folio');
    servers.push(folio);
    const nextKey = cycle(await folioTenant(folio.url, 'bench@example.test', 'team', KEYS));
    const nextRestricted = cycle(await benchKeys(folio.url, 'bench@example.test', KEYS, RESTRICTING_RULES));
    const ids = await seedFolio(folio, nextKey);
    await mkdir(join(dir, 'raw'));
    const raw = await startRaw(join(dir, 'raw'), { RAW_ITEMS: String(ITEMS) });
    servers.push(raw);
    const parse = await parsing;
    if ('skip' in parse) process.stderr.write(`Parse Server skipped: ${parse.skip}\n`);
    else servers.push(parse.server);

    const targets = [
      ...folioTargets(folio.url, nextKey, ids),
      ...folioTargets(folio.url, nextRestricted, ids)
        .filter((t) => t.workload === WORKLOADS.get || t.workload === WORKLOADS.list)
        .map((t) => ({ ...t, system: RESTRICTED })),
      ...rawTargets(raw.url, ITEMS),
      ...('skip' in parse ? [] : parseTargets(parse, categoryCycle())),
    ];
    const port = (url: unknown) => new URL(String(url)).port;
    const pid = (t: Target) => servers.find((s) => port(s.url) === port(t.options.url))?.child.pid;
    for (const t of targets) await measure(t, WARMUP_SECONDS, pid(t));
    const rounds = targets.map((): Round[] => []);
    // A workload's systems back to back, in turn forwards and backwards: each of Folio's rounds
    // is paired with the others' next to it (floors.ts), and neither side is always first.
    const byWorkload = Object.values(WORKLOADS).map((w) => targets.filter((t) => t.workload === w));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const group of byWorkload) {
        for (const t of round % 2 === 1 ? group : [...group].reverse()) {
          const r = await measure(t, SECONDS, pid(t));
          rounds[targets.indexOf(t)]?.push(r);
          process.stderr.write(
            `round ${round} ${t.system} ${t.workload}: ${r.requestsPerSecond.toFixed(0)} req/s, ${r.cpuMicrosPerRequest.toFixed(1)} µs/req\n`,
          );
        }
      }
    }
    const rows = targets.map((t, i): ThroughputRow => {
      const of = (name: keyof Round) => (rounds[i] ?? []).map((r) => r[name]);
      return {
        system: t.system,
        workload: t.workload,
        requestsPerSecond: summary(of('requestsPerSecond')),
        cpuMicrosPerRequest: summary(of('cpuMicrosPerRequest')),
        p50Ms: summary(of('p50Ms')).median,
        p99Ms: summary(of('p99Ms')).median,
        failed: of('failed').reduce((a, b) => a + b, 0),
      };
    });
    return { rows, parseSkipped: 'skip' in parse ? parse.skip : undefined };
  } finally {
    for (const server of servers.reverse()) await stop(server);
    const parse = await parsing;
    if (!('skip' in parse)) {
      await stop(parse.server);
      await parse.stop();
    }
    await rm(dir, { recursive: true, force: true });
  }
}

/** The rows as a markdown table, by workload then system. */
export function throughputTable(rows: readonly ThroughputRow[]): string {
  const workloads = [...new Set(rows.map((r) => r.workload))];
  const sorted = workloads.flatMap((w) => rows.filter((r) => r.workload === w));
  return [
    '| workload | system | req/s | spread | server CPU µs/req | spread | p50 ms | p99 ms | failed |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...sorted.map(
      (r) =>
        `| ${r.workload} | ${r.system} | ${r.requestsPerSecond.median.toFixed(0)} | ${percent(r.requestsPerSecond.spread)} | ${r.cpuMicrosPerRequest.median.toFixed(1)} | ${percent(r.cpuMicrosPerRequest.spread)} | ${r.p50Ms} | ${r.p99Ms} | ${r.failed} |`,
    ),
  ].join('\n');
}

if (process.argv[1]?.endsWith('throughput.ts')) {
  const result = await runThroughput();
  process.stdout.write(
    `${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s after ${WARMUP_SECONDS} s of warm-up${QUICK ? ' (quick run)' : ''}.\n\n${throughputTable(result.rows)}\n`,
  );
  if (result.parseSkipped) process.stdout.write(`\nParse Server did not run: ${result.parseSkipped}.\n`);
  if (process.env.BENCH_JSON) process.stdout.write(`${JSON.stringify(result)}\n`);
}
