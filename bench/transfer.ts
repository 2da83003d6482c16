/**
 * Import (25,000 documents, NDJSON and CSV), a 100-operation bulk request, export (250,000;
 * NDJSON, CSV, JSON: time, first byte, server RSS above the export's start) against `folio serve`
 * in its own process, and the `folio` CLI importing a 100,000-row CSV. raw better-sqlite3 does the
 * same in turn with Folio, round for round, so a busy minute weighs on both sides of a ratio: its
 * import and bulk write Folio's rows, its export reads its own table of the same documents.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { call, folioTenant, type Server, startFolio, startRaw, stop } from './processes.js';
import { type Median, percent, summary } from './stats.js';
import { processCpuMs } from './workloads/processCpu.js';
import {
  BULK_ROUNDS,
  BULK_WARMUP,
  bulkOperations,
  EXPORT_DOCS,
  IMPORT_DOCS,
  sized,
  transferCsv,
  transferNdjson,
} from './workloads/rows.js';

const ROUNDS = sized(5, 2);
const CLI_ROWS = sized(100_000, 5_000);
const MiB = 2 ** 20;

/** Folio's figure and raw's of one workload, ms per import, request or export. */
export interface OneShot {
  folio: Median;
  raw: Median;
  /** Folio's server CPU, ms (for bulk: per request). */
  folioCpuMs: number;
}

export interface ExportFigures {
  format: string;
  ms: Median;
  firstByteMs: number;
  mib: number;
  /** The server's peak RSS above its RSS when the export started, MiB. */
  addedMiB: number;
  cpuMs: number;
}

export interface TransferFigures {
  importNdjson: OneShot;
  importCsv: OneShot;
  bulk: OneShot;
  exportNdjson: OneShot;
  exports: ExportFigures[];
  cliMs: number;
}

/** Resident memory of a process from /proc, MiB: now and its high-water mark. */
function memory(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? Number.NaN);
  return { rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

/** Restart the high-water mark from the current RSS (Linux: `5` into clear_refs); false if refused. */
function restartPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** `work`'s wall time and the CPU `server` spent meanwhile, ms. */
async function timed(server: Server, work: () => Promise<unknown>): Promise<{ ms: number; cpuMs: number }> {
  const cpu = processCpuMs(server.child.pid);
  const t0 = performance.now();
  await work();
  return { ms: performance.now() - t0, cpuMs: processCpuMs(server.child.pid) - cpu };
}

/** An answer read to its end and thrown away: its bytes and when the first came. */
async function drain(url: string, init: RequestInit): Promise<{ bytes: number; firstByteMs: number }> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  if (res.status !== 200 || !res.body) throw new Error(`${url}: ${res.status}`);
  let bytes = 0;
  let firstByteMs = 0;
  for await (const chunk of res.body) {
    if (bytes === 0) firstByteMs = performance.now() - t0;
    bytes += chunk.byteLength;
  }
  return { bytes, firstByteMs };
}

/** Folio's and raw's rounds of one workload, back to back, each first in every other round. */
async function inTurn(
  rounds: number,
  folio: (round: number) => Promise<{ ms: number; cpuMs: number }>,
  raw: (round: number) => Promise<{ ms: number }>,
  warmUp = 0,
): Promise<OneShot> {
  const f: Array<{ ms: number; cpuMs: number }> = [];
  const r: number[] = [];
  for (let round = 0; round < warmUp + rounds; round++) {
    const rawFirst = round % 2 === 1;
    const rawBefore = rawFirst ? await raw(round) : undefined;
    const folioRound = await folio(round);
    const rawRound = rawBefore ?? (await raw(round));
    if (round < warmUp) continue;
    f.push(folioRound);
    r.push(rawRound.ms);
  }
  // A bulk request's few ms of CPU are near /proc's resolution one at a time: their mean.
  const cpu = f.reduce((sum, x) => sum + x.cpuMs, 0) / f.length;
  return { folio: summary(f.map((x) => x.ms)), raw: summary(r), folioCpuMs: cpu };
}

async function exportFormat(folio: Server, raw: Server, key: string, format: string, type: string) {
  const pid = folio.child.pid as number;
  const before = memory(pid).rss;
  const restarted = restartPeak(pid);
  let sampled = before;
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, memory(pid).rss);
  }, 10);
  let bytes = 0;
  let firstByteMs = 0;
  const figures = await inTurn(
    ROUNDS,
    (_round) =>
      timed(folio, async () => {
        const init = { headers: { Authorization: `Bearer ${key}`, Accept: type } };
        ({ bytes, firstByteMs } = await drain(`${folio.url}/bench/exported/_export`, init));
      }),
    // raw exports NDJSON; the other formats are Folio's alone.
    () =>
      format === 'NDJSON' ? timed(raw, () => drain(`${raw.url}/export`, {})) : Promise.resolve({ ms: 0 }),
  );
  clearInterval(sampler);
  const addedMiB = Math.max(restarted ? memory(pid).peak : 0, sampled) - before;
  const mib = bytes / MiB;
  return {
    result: { format, ms: figures.folio, firstByteMs, mib, addedMiB, cpuMs: figures.folioCpuMs },
    figures,
  };
}

async function cliImport(folio: Server, dir: string): Promise<number> {
  const [proKey] = await folioTenant(folio.url, 'bench-pro@example.test', 'pro');
  const file = join(dir, 'cli.csv');
  await writeFile(file, transferCsv(0, CLI_ROWS));
  const t0 = performance.now();
  const cli = spawn(process.execPath, ['bin/folio.js', 'import', file, '-c', 'cli_big'], {
    env: { ...process.env, FOLIO_URL: folio.url, FOLIO_API_KEY: proKey, FOLIO_PROJECT: 'bench' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [code] = await once(cli, 'exit');
  if (code !== 0) throw new Error(`folio import exited with ${code}`);
  return performance.now() - t0;
}

export async function runTransfer(): Promise<TransferFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'folio-bench-transfer-'));
  await mkdir(join(dir, 'raw'));
  const raw = await startRaw(join(dir, 'raw'), {
    RAW_ITEMS: '1',
    RAW_BIG_DOCS: '1',
    RAW_EXPORT_DOCS: `${EXPORT_DOCS}`,
  });
  let folio = await startFolio(dir, 'folio');
  try {
    const [key] = (await folioTenant(folio.url, 'bench@example.test', 'team')) as [string];
    const post = (server: Server, url: string, body: string, type: string, k?: string) =>
      timed(server, () => call(url, { body, type, key: k }));
    // raw reads a text/plain body as NDJSON.
    const imports = async (body: string, type: string, name: string) =>
      inTurn(
        ROUNDS,
        (round) => post(folio, `${folio.url}/bench/${name}_${round}/_import`, body, type, key),
        (round) =>
          post(
            raw,
            `${raw.url}/rows/import?into=${name}_${round}`,
            body,
            type.replace(/.*ndjson/, 'text/plain'),
          ),
      );
    const importNdjson = await imports(transferNdjson(0, IMPORT_DOCS), 'application/x-ndjson', 'nd');
    const importCsv = await imports(transferCsv(0, IMPORT_DOCS), 'text/csv', 'csv');
    process.stderr.write('transfer: imports done\n');

    const bulkBody = (round: number) => JSON.stringify({ operations: bulkOperations(round) });
    const bulk = await inTurn(
      BULK_ROUNDS,
      (round) => post(folio, `${folio.url}/bench/bulk/_bulk`, bulkBody(round), 'application/json', key),
      (round) => post(raw, `${raw.url}/rows/bulk`, bulkBody(round), 'application/json'),
      BULK_WARMUP,
    );
    process.stderr.write('transfer: bulk done\n');

    for (let start = 0; start < EXPORT_DOCS; start += IMPORT_DOCS) {
      const body = transferNdjson(start, Math.min(IMPORT_DOCS, EXPORT_DOCS - start));
      await call(`${folio.url}/bench/exported/_import`, { body, type: 'application/x-ndjson', key });
    }
    // A fresh server: its RSS above idle is the export's own. One export first, unmeasured, fills
    // SQLite's page cache and the heap's young generation, which the first format would carry alone.
    await stop(folio);
    folio = await startFolio(dir, 'folio');
    await drain(`${folio.url}/bench/exported/_export`, { headers: { Authorization: `Bearer ${key}` } });
    const exports: ExportFigures[] = [];
    let exportNdjson: OneShot | undefined;
    for (const [format, type] of [
      ['NDJSON', 'application/x-ndjson'],
      ['CSV', 'text/csv'],
      ['JSON', 'application/json'],
    ] as const) {
      const { result, figures } = await exportFormat(folio, raw, key, format, type);
      exports.push(result);
      exportNdjson ??= figures;
    }
    process.stderr.write('transfer: exports done\n');
    const cliMs = await cliImport(folio, dir);
    return { importNdjson, importCsv, bulk, exportNdjson: exportNdjson as OneShot, exports, cliMs };
  } finally {
    await stop(folio);
    await stop(raw);
    await rm(dir, { recursive: true, force: true });
  }
}

/** The figures as markdown. */
export function transferTable(t: TransferFigures): string {
  const rate = (m: Median) => `${Math.round(IMPORT_DOCS / (m.median / 1000)).toLocaleString('en')} docs/s`;
  const ms = (m: Median) => `${m.median.toFixed(1)} ms`;
  const row = (name: string, o: OneShot, show: (m: Median) => string, cpu: string) =>
    `| ${name} | ${show(o.folio)} | ${percent(o.folio.spread)} | ${show(o.raw)} | ${percent(o.raw.spread)} | ${(o.folio.median / o.raw.median).toFixed(2)} | ${cpu} |`;
  const perDoc = (o: OneShot) => `${((o.folioCpuMs * 1000) / IMPORT_DOCS).toFixed(1)} µs/doc`;
  return [
    `| workload | Folio | spread | raw better-sqlite3 | spread | Folio's time ÷ raw's | Folio's server CPU |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    row(
      `import ${IMPORT_DOCS.toLocaleString('en')}, NDJSON (raw: Folio's rows)`,
      t.importNdjson,
      rate,
      perDoc(t.importNdjson),
    ),
    row(
      `import ${IMPORT_DOCS.toLocaleString('en')}, CSV (raw: Folio's rows, papaparse)`,
      t.importCsv,
      rate,
      perDoc(t.importCsv),
    ),
    row(
      "bulk of 100 operations (raw: Folio's rows)",
      t.bulk,
      ms,
      `${t.bulk.folioCpuMs.toFixed(1)} ms/request`,
    ),
    row(
      `export ${EXPORT_DOCS.toLocaleString('en')}, NDJSON (raw: its own table)`,
      t.exportNdjson,
      ms,
      `${t.exportNdjson.folioCpuMs.toFixed(0)} ms`,
    ),
    '',
    `| export ${EXPORT_DOCS.toLocaleString('en')} | time | spread | first byte | size | server RSS above its start | server CPU |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...t.exports.map(
      (e) =>
        `| ${e.format} | ${(e.ms.median / 1000).toFixed(2)} s | ${percent(e.ms.spread)} | ${e.firstByteMs.toFixed(0)} ms | ${e.mib.toFixed(0)} MiB | ${e.addedMiB.toFixed(0)} MiB | ${e.cpuMs.toFixed(0)} ms |`,
    ),
    '',
    `The CLI (\`folio import\`, a ${CLI_ROWS.toLocaleString('en')}-row CSV on a Pro key): ${(t.cliMs / 1000).toFixed(1)} s.`,
  ].join('\n');
}

if (process.argv[1]?.endsWith('transfer.ts')) {
  const figures = await runTransfer();
  process.stdout.write(
    `${ROUNDS} rounds of each import and export, ${BULK_ROUNDS} bulk requests after ${BULK_WARMUP} of warm-up; Folio and raw in turn.\n\n${transferTable(figures)}\n`,
  );
  if (process.env.BENCH_JSON) process.stdout.write(`${JSON.stringify(figures)}\n`);
}
