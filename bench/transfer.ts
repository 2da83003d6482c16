/**
 * Import, export and bulk on the embedded store, against `folio serve` in its own process (so
 * its memory is measured alone): import 25,000 documents as NDJSON and as CSV, export 250,000
 * (wall time, time to first byte, peak RSS of the server above idle), a 100-operation bulk
 * request, and the `folio` CLI importing a 100,000-row CSV on a Pro key (cut into parts).
 *
 * Run alone: `node --import tsx bench/transfer.ts`; `npm run bench` runs it after the query
 * bench. Env: BENCH_JSON=1 adds a machine-readable line; TRANSFER_ONLY (comma-separated, of
 * import, export, bulk, cli) runs only those parts (export seeds its documents whatever is
 * chosen); TRANSFER_FOLIO_NODE_ARGS: extra node arguments for the server (for example
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`: a profile per server process); TRANSFER_IMPORT_ROUNDS
 * (3) imports of each format and TRANSFER_EXPORT_ROUNDS (3) exports of each, the median
 * reported with the spread across them; TRANSFER_BULK_ROUNDS (100) timed bulk requests after
 * TRANSFER_BULK_WARMUP (50) that warm the servers' code up (bench/workloads/rows.ts says why so
 * many).
 *
 * raw better-sqlite3 (bench/workloads/rawSqlite.ts, its own process) does the same workloads in
 * turn with Folio, round for round: each Folio import, export or bulk request is followed by
 * raw's (and, for import and bulk, raw's writing Folio's rows), so a slower disk or a busy
 * neighbour in one minute weighs on both sides of a ratio. Measured minutes apart, raw's bulk
 * moved 3.1 → 1.7 ms between two whole runs while Folio's moved 9.4 → 6.2. TRANSFER_RAW=0
 * measures Folio alone.
 *
 * Last, a fresh server over the same data runs each workload again under the profiler
 * (bench/workloads/profiledRun.ts), and the JSON line carries where its time went
 * (`profiles`), for the report's section on missed targets; TRANSFER_PROFILE=0 leaves it out.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type FolioProcess, serveFolio, stopFolio } from '../test/support/folioProcess.js';
import { type ProfileSummary, type ProfileUnit, profileLine } from './cpuProfile.js';
import { median } from './stats.js';
import { spread } from './storageTargets.js';
import { processCpuMs } from './workloads/processCpu.js';
import { optionalProfiles, type ProfiledLoad, profiledRun } from './workloads/profiledRun.js';
import { startRawAlone } from './workloads/rawServer.js';
import {
  BULK_OPS,
  bulkOperations,
  transferCsv as csv,
  BULK_ROUNDS as DEFAULT_BULK_ROUNDS,
  BULK_WARMUP as DEFAULT_BULK_WARMUP,
  EXPORT_DOCS,
  IMPORT_DOCS,
  PROFILE_BULK_REQUESTS,
  transferNdjson,
} from './workloads/rows.js';

const CLI_ROWS = 100_000;
/**
 * Rounds of each one-shot workload: a single import or export moves with whatever else the
 * machine did in that second, so each figure is the median of several, with their spread.
 */
const IMPORT_ROUNDS = Number(process.env.TRANSFER_IMPORT_ROUNDS ?? 3);
const EXPORT_ROUNDS = Number(process.env.TRANSFER_EXPORT_ROUNDS ?? 3);
/** Bulk requests timed, after the warm-up ones (bench/workloads/rows.ts says why so many). */
const BULK_ROUNDS = Number(process.env.TRANSFER_BULK_ROUNDS ?? DEFAULT_BULK_ROUNDS);
const BULK_WARMUP = Number(process.env.TRANSFER_BULK_WARMUP ?? DEFAULT_BULK_WARMUP);
const ONLY = process.env.TRANSFER_ONLY ? new Set(process.env.TRANSFER_ONLY.split(',')) : null;
const want = (part: 'import' | 'export' | 'bulk' | 'cli') => !ONLY || ONLY.has(part);
/** TRANSFER_EXPORT_FORMATS: the export formats measured (comma-separated; all three by default). */
const EXPORT_FORMATS = process.env.TRANSFER_EXPORT_FORMATS
  ? new Set(process.env.TRANSFER_EXPORT_FORMATS.split(','))
  : null;
const FOLIO_NODE_ARGS = process.env.TRANSFER_FOLIO_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const WITH_RAW = process.env.TRANSFER_RAW !== '0';
/** A profiled pass after the measurements (TRANSFER_PROFILE=0: none). */
const PROFILE = process.env.TRANSFER_PROFILE !== '0';
const DOCUMENTS: ProfileUnit = ['document', 'documents'];

function serve(dataDir: string): Promise<FolioProcess> {
  return serveFolio({ FOLIO_DATA_DIR: dataDir }, FOLIO_NODE_ARGS);
}

/** Resident memory of a process, from /proc: current and peak (high-water mark), in MiB. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/**
 * Start the process's high-water mark again from its current RSS (Linux: `5` into clear_refs),
 * so each export format's peak is its own: VmHWM only grows, and the formats measured after
 * the first reported its peak, not theirs. False where /proc refuses (then only the 10 ms
 * samples count).
 */
function restartPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** An export read to its end and thrown away. */
async function drain(url: string, key: string): Promise<void> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${key}` } });
  if (res.status !== 200 || !res.body) throw new Error(`${url}: ${res.status}`);
  for await (const _chunk of res.body);
}

async function call(url: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${init.method ?? 'GET'} ${url}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** An account on the Team plan with a project `bench`; returns a read-write key. */
async function tenant(url: string, email: string, plan: 'pro' | 'team'): Promise<string> {
  const json = { 'Content-Type': 'application/json' };
  const { token } = await call(`${url}/api/auth/signup`, {
    method: 'POST',
    headers: json,
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  const session = { ...json, Authorization: `Bearer ${token}` };
  await call(`${url}/api/account`, { method: 'PATCH', headers: session, body: JSON.stringify({ plan }) });
  await call(`${url}/api/projects`, { method: 'POST', headers: session, body: '{"name":"bench"}' });
  const { rawKey } = await call(`${url}/api/keys`, {
    method: 'POST',
    headers: session,
    body: JSON.stringify({ project: 'bench', name: 'bench', env: 'test', scope: 'read-write' }),
  });
  return rawKey;
}

const ndjson = transferNdjson;

/** The server's CPU (ms, all its threads) while `work` runs. */
async function serverCpu<T>(work: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const pid = server.child.pid;
  const before = processCpuMs(pid);
  const value = await work();
  return { value, cpuMs: processCpuMs(pid) - before };
}

type ImportRound = Awaited<ReturnType<typeof timedImport>>;

/** The median of each figure over the rounds, and how far the rounds spread (max − min, ÷ median). */
function importSummary(rounds: ImportRound[]) {
  const of = (name: 'ms' | 'docsPerSecond' | 'cpuMs' | 'cpuMicrosPerDoc') => rounds.map((r) => r[name]);
  return {
    rounds: rounds.length,
    ms: median(of('ms')),
    docsPerSecond: median(of('docsPerSecond')),
    spread: spread(of('docsPerSecond')),
    bytes: rounds[0]!.bytes,
    cpuMs: median(of('cpuMs')),
    cpuMicrosPerDoc: median(of('cpuMicrosPerDoc')),
    cpuSpread: spread(of('cpuMicrosPerDoc')),
  };
}

async function timedImport(url: string, key: string, collection: string, body: string, type: string) {
  const cpuBefore = processCpuMs(server.child.pid);
  const t0 = performance.now();
  const result = await call(`${url}/bench/${collection}/_import`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': type },
    body,
  });
  const ms = performance.now() - t0;
  if (result.imported !== result.total)
    throw new Error(`import incomplete: ${JSON.stringify(result).slice(0, 300)}`);
  const cpuMs = processCpuMs(server.child.pid) - cpuBefore;
  return {
    ms,
    docsPerSecond: (result.imported / ms) * 1000,
    bytes: Buffer.byteLength(body),
    cpuMs,
    cpuMicrosPerDoc: (cpuMs * 1000) / result.imported,
  };
}

/** One request to raw better-sqlite3: its time and its server's CPU. */
interface RawRound {
  ms: number;
  cpuMs: number;
}

/** A GET without `body`; `check` sees the answer (which is not kept: an export's is 70 MiB). */
async function rawRequest(
  path: string,
  body?: string,
  type = 'text/plain',
  check?: (text: string) => void,
): Promise<RawRound> {
  const pid = raw!.pid;
  const before = processCpuMs(pid);
  const t0 = performance.now();
  const res = await fetch(`${raw!.url}${path}`, {
    ...(body === undefined ? {} : { method: 'POST', headers: { 'Content-Type': type }, body }),
  });
  const text = await res.text();
  const round = { ms: performance.now() - t0, cpuMs: processCpuMs(pid) - before };
  if (res.status >= 300) throw new Error(`raw ${path}: ${res.status} ${text.slice(0, 200)}`);
  check?.(text);
  return round;
}

/** raw's rounds of one workload: the median time and CPU, and how far the times spread. */
function rawSummary(rounds: RawRound[]) {
  const ms = rounds.map((r) => r.ms);
  const cpu = rounds.map((r) => r.cpuMs);
  return {
    rounds: rounds.length,
    ms: median(ms),
    spread: spread(ms),
    cpuMs: median(cpu),
    // A bulk request's few ms are below /proc's resolution one at a time: their mean.
    cpuMsMean: cpu.reduce((a, b) => a + b, 0) / cpu.length,
  };
}

const dataDir = await mkdtemp(join(tmpdir(), 'folio-bench-transfer-'));
const out = process.stdout;
const results: Record<string, unknown> = {};
const rawRounds = {
  importNdjson: [] as RawRound[],
  importCsv: [] as RawRound[],
  rowsImport: [] as RawRound[],
  exportNdjson: [] as RawRound[],
  bulk: [] as RawRound[],
  rowsBulk: [] as RawRound[],
};
const raw = WITH_RAW ? await startRawAlone(want('export') ? EXPORT_DOCS : 0) : null;
let server = await serve(dataDir);
try {
  const key = await tenant(server.url, 'bench-team@example.test', 'team');
  const bulkBody = (round: number) => JSON.stringify({ operations: bulkOperations(round) });
  /** One bulk request of the bench's 100 operations, to whichever server runs now. */
  const postBulk = (body: string) =>
    call(`${server.url}/bench/bulk/_bulk`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body,
    });

  // Import 25,000 documents, NDJSON then CSV, each round into collections of its own.
  if (want('import')) {
    const ndBody = ndjson(0, IMPORT_DOCS);
    const csvBody = csv(0, IMPORT_DOCS);
    const nd: ImportRound[] = [];
    const cs: ImportRound[] = [];
    for (let round = 0; round < IMPORT_ROUNDS; round++) {
      nd.push(await timedImport(server.url, key, `imported_nd_${round}`, ndBody, 'application/x-ndjson'));
      if (raw) rawRounds.importNdjson.push(await rawRequest(`/import?into=nd_${round}`, ndBody));
      cs.push(await timedImport(server.url, key, `imported_csv_${round}`, csvBody, 'text/csv'));
      if (raw) rawRounds.importCsv.push(await rawRequest(`/import/csv?into=csv_${round}`, csvBody));
      // raw writing the rows Folio writes for each document (document and change: a create
      // replaces no version).
      if (raw) rawRounds.rowsImport.push(await rawRequest(`/rows/import?into=rows_${round}`, ndBody));
    }
    results.importNdjson = importSummary(nd);
    results.importCsv = importSummary(cs);
  }

  // Seed 250,000 documents for the export (10 imports of 25,000).
  if (want('export')) {
    const seedStart = performance.now();
    for (let part = 0; part < EXPORT_DOCS / IMPORT_DOCS; part++) {
      await timedImport(
        server.url,
        key,
        'exported',
        ndjson(part * IMPORT_DOCS, IMPORT_DOCS),
        'application/x-ndjson',
      );
    }
    results.seedMs = performance.now() - seedStart;
  }

  // Bulk: 100 operations (creates, replaces, patches, deletes) in one request.
  if (want('bulk')) {
    const bulkTimes: number[] = [];
    const bulkCpu: number[] = [];
    // raw gets the same operations (its own table, and Folio's rows in a database of its own).
    const allSucceeded = (text: string) => {
      const { results } = JSON.parse(text) as { results: Array<{ status: number }> };
      if (results.length !== BULK_OPS || results.some((r) => r.status >= 300))
        throw new Error(`raw bulk failed: ${text.slice(0, 200)}`);
    };
    for (let round = 0; round < BULK_WARMUP + BULK_ROUNDS; round++) {
      const body = bulkBody(round);
      const t0 = performance.now();
      const { value: res, cpuMs } = await serverCpu(() => postBulk(body));
      if (res.summary.failed !== 0) throw new Error(`bulk failed: ${JSON.stringify(res.summary)}`);
      if (round >= BULK_WARMUP) {
        bulkTimes.push(performance.now() - t0);
        bulkCpu.push(cpuMs);
      }
      if (raw) {
        const rawBulk = await rawRequest('/bulk', body, 'application/json', allSucceeded);
        const rowsBulk = await rawRequest('/rows/bulk', body, 'application/json', allSucceeded);
        if (round >= BULK_WARMUP) {
          rawRounds.bulk.push(rawBulk);
          rawRounds.rowsBulk.push(rowsBulk);
        }
      }
    }
    bulkTimes.sort((a, b) => a - b);
    results.bulk100Ms = {
      median: median(bulkTimes),
      min: bulkTimes[0],
      max: bulkTimes.at(-1),
      spread: spread(bulkTimes),
      // Server CPU of one request, ms, as a mean: /proc counts 10 ms ticks.
      cpuMsMean: bulkCpu.reduce((a, b) => a + b, 0) / bulkCpu.length,
    };
  }

  // Export 250,000 from a freshly started server: peak RSS above idle is the export's own cost.
  if (want('export')) {
    await stopFolio(server);
    server = await serve(dataDir);
    await call(`${server.url}/bench/exported?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
    const fresh = memory(server.child.pid!);
    // One export first, unmeasured: it fills SQLite's page cache (bounded by
    // FOLIO_EMBEDDED_PAGE_CACHE_MB, 64 MiB) and the heap's young generation, which the first
    // format measured would otherwise carry alone.
    await drain(`${server.url}/bench/exported/_export`, key);
    const warm = memory(server.child.pid!);
    for (const [format, type] of [
      ['ndjson', 'application/x-ndjson'],
      ['csv', 'text/csv'],
      ['json', 'application/json'],
    ] as const) {
      if (EXPORT_FORMATS && !EXPORT_FORMATS.has(format)) continue;
      const before = memory(server.child.pid!);
      const peakRestarted = restartPeak(server.child.pid!);
      let sampledPeak = before.rss;
      const sampler = setInterval(() => {
        sampledPeak = Math.max(sampledPeak, memory(server.child.pid!).rss);
      }, 10);
      const rounds: Array<{ ms: number; firstByteMs: number; bytes: number; cpuMs: number }> = [];
      for (let round = 0; round < EXPORT_ROUNDS; round++) {
        const cpuBefore = processCpuMs(server.child.pid);
        const t0 = performance.now();
        const res = await fetch(`${server.url}/bench/exported/_export`, {
          headers: { Authorization: `Bearer ${key}`, Accept: type },
        });
        if (res.status !== 200 || !res.body) throw new Error(`export ${format}: ${res.status}`);
        let firstByteMs = 0;
        let bytes = 0;
        for await (const chunk of res.body) {
          if (bytes === 0) firstByteMs = performance.now() - t0;
          bytes += chunk.byteLength;
        }
        const ms = performance.now() - t0;
        rounds.push({ ms, firstByteMs, bytes, cpuMs: processCpuMs(server.child.pid) - cpuBefore });
        if (raw && format === 'ndjson') {
          const exported = await rawRequest('/export', undefined, undefined, (text) => {
            const lines = text.split('\n').length - 1;
            if (lines !== EXPORT_DOCS) throw new Error(`raw export answered ${lines} rows`);
          });
          rawRounds.exportNdjson.push(exported);
        }
      }
      clearInterval(sampler);
      // The high-water mark over every round: flat memory means no round grew it.
      const mem = memory(server.child.pid!);
      const of = (name: 'ms' | 'firstByteMs' | 'cpuMs') => rounds.map((round) => round[name]);
      results[`export_${format}`] = {
        ms: median(of('ms')),
        spread: spread(of('ms')),
        rounds: rounds.length,
        firstByteMs: median(of('firstByteMs')),
        mib: rounds[0]!.bytes / 2 ** 20,
        freshRssMiB: fresh.rss,
        warmRssMiB: warm.rss,
        beforeRssMiB: before.rss,
        peakRssMiB: Math.max(peakRestarted ? mem.peak : 0, sampledPeak),
        aboveBeforeMiB: Math.max(peakRestarted ? mem.peak : 0, sampledPeak) - before.rss,
        cpuMs: median(of('cpuMs')),
      };
    }
  }

  // The CLI: a 100,000-row CSV on a Pro key (5,000 documents per request).
  if (want('cli')) {
    const proKey = await tenant(server.url, 'bench-pro@example.test', 'pro');
    const file = join(dataDir, 'big.csv');
    await writeFile(file, csv(0, CLI_ROWS));
    const t0 = performance.now();
    const cli = spawn(process.execPath, ['bin/folio.js', 'import', file, '-c', 'cli_big'], {
      env: { ...process.env, FOLIO_URL: server.url, FOLIO_API_KEY: proKey, FOLIO_PROJECT: 'bench' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let summary = '';
    cli.stdout!.on('data', (c) => {
      summary += String(c);
    });
    const [code] = await once(cli, 'exit');
    if (code !== 0) throw new Error(`folio import exited ${code}: ${summary}`);
    results.cli100kCsvPro = { ms: performance.now() - t0, ...JSON.parse(summary) };
  }
  // Last, where a Folio server's time goes in each workload: a fresh server over the same data
  // with the profiler on (which slows it, so this comes after every measurement), for the
  // report's section on missed targets. TRANSFER_PROFILE=0 leaves it out.
  async function profileTransfer() {
    await stopFolio(server);
    const bulkBase = BULK_WARMUP + BULK_ROUNDS;
    const bulk = (round: number) => postBulk(bulkBody(round));
    const importInto = async (collection: string, body: string, type: string) => {
      await timedImport(server.url, key, collection, body, type);
      return IMPORT_DOCS;
    };
    const loads: ProfiledLoad[] = [];
    if (want('bulk'))
      loads.push({
        name: 'bulk of 100',
        unit: ['request of 100 operations', 'requests of 100 operations'],
        warmUp: async () => {
          for (let i = 0; i < PROFILE_BULK_REQUESTS; i++) await bulk(bulkBase + i);
        },
        run: async () => {
          for (let i = 0; i < PROFILE_BULK_REQUESTS; i++) await bulk(bulkBase + PROFILE_BULK_REQUESTS + i);
          return PROFILE_BULK_REQUESTS;
        },
      });
    if (want('import')) {
      const ndBody = ndjson(0, IMPORT_DOCS);
      const csvBody = csv(0, IMPORT_DOCS);
      loads.push(
        {
          name: 'import NDJSON',
          unit: DOCUMENTS,
          warmUp: () => importInto('profiled_nd_warm', ndBody, 'application/x-ndjson'),
          run: () => importInto('profiled_nd', ndBody, 'application/x-ndjson'),
        },
        {
          name: 'import CSV',
          unit: DOCUMENTS,
          warmUp: () => importInto('profiled_csv_warm', csvBody, 'text/csv'),
          run: () => importInto('profiled_csv', csvBody, 'text/csv'),
        },
      );
    }
    if (want('export'))
      loads.push({
        name: 'export NDJSON',
        unit: DOCUMENTS,
        warmUp: () => drain(`${server.url}/bench/exported/_export`, key),
        run: async () => {
          await drain(`${server.url}/bench/exported/_export`, key);
          return EXPORT_DOCS;
        },
      });
    return profiledRun(
      join(dataDir, 'profiles'),
      async (nodeArgs) => {
        server = await serveFolio({ FOLIO_DATA_DIR: dataDir }, [...FOLIO_NODE_ARGS, ...nodeArgs]);
        return { stop: () => stopFolio(server) };
      },
      loads,
    );
  }
  const profiled = await optionalProfiles(PROFILE, 'TRANSFER_PROFILE=0', profileTransfer);
  results.profiles = Object.fromEntries(profiled.profiles);
  if (profiled.notProfiled) results.profileError = profiled.notProfiled;
  if (raw) {
    const measured = Object.entries(rawRounds).filter(([, rounds]) => rounds.length > 0);
    results.raw = Object.fromEntries(measured.map(([name, rounds]) => [name, rawSummary(rounds)]));
  }
} finally {
  await stopFolio(server).catch(() => {});
  await raw?.stop();
  await rm(dataDir, { recursive: true, force: true });
}

const r = results as Record<string, Record<string, number>>;
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : 'n/a');
out.write('\nFolio bench: import / export / bulk (embedded store, server in its own process)\n');
for (const [name, key] of [
  ['import 25,000 NDJSON', 'importNdjson'],
  ['import 25,000 CSV', 'importCsv'],
] as const) {
  if (!r[key]) continue;
  out.write(
    `${name.padEnd(28)}${(r[key]!.ms! / 1000).toFixed(2)} s   ${Math.round(r[key]!.docsPerSecond!).toLocaleString('en')} docs/s (median of ${r[key]!.rounds}, spread ${pct(r[key]!.spread!)})   server CPU ${r[key]!.cpuMicrosPerDoc!.toFixed(1)} µs/doc (spread ${pct(r[key]!.cpuSpread!)})\n`,
  );
}
if (results.seedMs !== undefined)
  out.write(`${'seed 250,000 (10 imports)'.padEnd(28)}${((results.seedMs as number) / 1000).toFixed(1)} s\n`);
const exported = ['ndjson', 'csv', 'json'].map((format) => r[`export_${format}`]).find(Boolean);
if (exported)
  out.write(
    `${'export memory'.padEnd(28)}server RSS fresh ${exported.freshRssMiB!.toFixed(0)} MiB, ${exported.warmRssMiB!.toFixed(0)} MiB after one unmeasured export (mostly SQLite's page cache, at most 64 MiB); each format's peak is above its own start\n`,
  );
for (const format of ['ndjson', 'csv', 'json']) {
  const e = r[`export_${format}`];
  if (!e) continue;
  out.write(
    `${`export 250,000 ${format}`.padEnd(28)}${(e.ms! / 1000).toFixed(2)} s (median of ${e.rounds}, spread ${pct(e.spread!)})   first byte ${e.firstByteMs!.toFixed(0)} ms   ` +
      `${e.mib!.toFixed(0)} MiB   server RSS before ${e.beforeRssMiB!.toFixed(0)} MiB, peak ${e.peakRssMiB!.toFixed(0)} MiB (+${e.aboveBeforeMiB!.toFixed(0)})   server CPU ${e.cpuMs!.toFixed(0)} ms\n`,
  );
}
if (r.bulk100Ms)
  out.write(
    `${'bulk, 100 operations'.padEnd(28)}median ${r.bulk100Ms!.median!.toFixed(1)} ms of ${BULK_ROUNDS} (min ${r.bulk100Ms!.min!.toFixed(1)}, max ${r.bulk100Ms!.max!.toFixed(1)}, spread ${pct(r.bulk100Ms!.spread!)})   server CPU ${r.bulk100Ms!.cpuMsMean!.toFixed(1)} ms\n`,
  );
const rawOf = (results.raw ?? {}) as Record<string, Record<string, number>>;
for (const [name, key, folio] of [
  ['raw: import NDJSON', 'importNdjson', r.importNdjson?.ms],
  ['raw: import CSV', 'importCsv', r.importCsv?.ms],
  ["raw: import, Folio's rows", 'rowsImport', r.importNdjson?.ms],
  ['raw: export NDJSON', 'exportNdjson', r.export_ndjson?.ms],
  ['raw: bulk of 100', 'bulk', r.bulk100Ms?.median],
  ["raw: bulk, Folio's rows", 'rowsBulk', r.bulk100Ms?.median],
] as const) {
  const one = rawOf[key];
  if (!one) continue;
  const ratio = folio === undefined ? 'n/a' : (folio / one.ms!).toFixed(2);
  out.write(
    `${name.padEnd(28)}${one.ms!.toFixed(1)} ms (median of ${one.rounds}, spread ${pct(one.spread!)})   Folio's time ÷ raw's ${ratio}\n`,
  );
}
const cliRun = r.cli100kCsvPro;
if (cliRun)
  out.write(
    `${'CLI: 100,000-row CSV, Pro'.padEnd(28)}${(cliRun.ms! / 1000).toFixed(1)} s   ${cliRun.requests} requests   imported ${cliRun.imported}\n`,
  );
// Where the profiled server's main thread spent each workload, its three largest areas.
for (const [name, summary] of Object.entries((results.profiles ?? {}) as Record<string, ProfileSummary>))
  out.write(`${profileLine(name, summary)}\n`);
if (process.env.BENCH_JSON) out.write(`${JSON.stringify(results)}\n`);
