/**
 * The peer bench's one-shot workloads, Folio beside the baselines of the same run: import of
 * 25,000 NDJSON rows, export of 250,000, a bulk request of 100 operations, change-stream
 * write-to-event latency with 1,000 subscribers, webhook deliveries per second.
 *
 * Folio's figures come from bench/transfer.ts, bench/streams.ts and bench/webhooks.ts (run
 * as children by bench/run.ts); the raw better-sqlite3 and pouchdb-server figures are
 * measured here, on the servers the peer bench has started. A system with no equivalent
 * endpoint reads "n/a".
 *
 * Run alone (`node --import tsx bench/workloads/transferBaselines.ts`), it starts the raw
 * better-sqlite3 server by itself and prints its figures, to set beside bench/transfer.ts's.
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Server } from '../peers.js';
import { median } from '../stats.js';
import { judgeOneShot, oneShotLine, spread } from '../storageTargets.js';
import { processCpuMs } from './processCpu.js';
import { bigRow, transferCsv, transferNdjson } from './rows.js';

export const IMPORT_DOCS = 25_000;
export const EXPORT_DOCS = 250_000;
export const BULK_OPS = 100;
/** As bench/transfer.ts measures Folio: rounds of each one-shot workload, bulk requests timed after a warm-up. */
const ROUNDS = 3;
const BULK_ROUNDS = 20;
const BULK_WARMUP = 5;

/** What the Folio-only benches printed as their JSON line (absent when not run). */
export interface FolioSide {
  transfer?: Record<string, unknown>;
  streams?: Record<string, unknown>;
  webhooks?: Record<string, unknown>;
}

export interface Baselines {
  /** How far each figure's rounds spread (max − min, ÷ median), by the figure's name. */
  spreads?: Record<string, number>;
  rawImportDocsPerSecond?: number;
  rawImportCsvDocsPerSecond?: number;
  rawExportSeconds?: number;
  rawBulkMs?: number;
  /** Server CPU: µs per imported document (NDJSON, CSV), ms for the export, ms per bulk request (mean). */
  rawImportCpuMicrosPerDoc?: number;
  rawImportCsvCpuMicrosPerDoc?: number;
  rawExportCpuMs?: number;
  rawBulkCpuMs?: number;
  /** raw better-sqlite3 writing Folio's rows (document, version, change) for each document. */
  rowsImportDocsPerSecond?: number;
  rowsBulkMs?: number;
  pouchImportDocsPerSecond?: number;
  pouchBulkMs?: number;
}

async function timed(url: string, init: RequestInit): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${text.slice(0, 200)}`);
  return { ms: performance.now() - t0, text };
}

async function bulkMedian(
  url: string,
  body: () => string,
  pid?: number,
): Promise<{ ms: number; spread: number; cpuMs: number }> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let round = 0; round < BULK_WARMUP + BULK_ROUNDS; round++) {
    const before = processCpuMs(pid);
    const { ms } = await timed(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: body(),
    });
    if (round >= BULK_WARMUP) {
      times.push(ms);
      cpu.push(processCpuMs(pid) - before);
    }
  }
  // CPU as a mean: /proc counts 10 ms ticks, finer than one request only in a sum.
  return { ms: median(times), spread: spread(times), cpuMs: cpu.reduce((a, b) => a + b, 0) / cpu.length };
}

/**
 * `ROUNDS` imports (or exports) of the same rows: the median time and server CPU, and how far
 * the times spread.
 */
async function rounds(
  pid: number | undefined,
  once: (round: number) => Promise<{ ms: number }>,
): Promise<{ ms: number; spread: number; cpuMs: number }> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const before = processCpuMs(pid);
    times.push((await once(round)).ms);
    cpu.push(processCpuMs(pid) - before);
  }
  return { ms: median(times), spread: spread(times), cpuMs: median(cpu) };
}

export async function measureBaselines(raw: Server | null, pouch: Server | null): Promise<Baselines> {
  const out: Baselines = {};
  const spreads: Record<string, number> = {};
  out.spreads = spreads;
  // The documents Folio's import stores (bench/transfer.ts), so both write the same bytes.
  const rows = transferNdjson(0, IMPORT_DOCS);
  if (raw) {
    const pid = raw.child.pid;
    const post = (path: string, body: string) =>
      timed(`${raw.url}${path}`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body });
    const imported = await rounds(pid, (round) => post(`/import?into=nd_${round}`, rows));
    out.rawImportDocsPerSecond = IMPORT_DOCS / (imported.ms / 1000);
    out.rawImportCpuMicrosPerDoc = (imported.cpuMs * 1000) / IMPORT_DOCS;
    spreads.rawImport = imported.spread;
    const csvRows = transferCsv(0, IMPORT_DOCS);
    const importedCsv = await rounds(pid, (round) => post(`/import/csv?into=csv_${round}`, csvRows));
    out.rawImportCsvDocsPerSecond = IMPORT_DOCS / (importedCsv.ms / 1000);
    out.rawImportCsvCpuMicrosPerDoc = (importedCsv.cpuMs * 1000) / IMPORT_DOCS;
    spreads.rawImportCsv = importedCsv.spread;
    const exported = await rounds(pid, async () => {
      const answer = await timed(`${raw.url}/export`, {});
      const lines = answer.text.split('\n').length - 1;
      if (lines !== EXPORT_DOCS) throw new Error(`raw export answered ${lines} rows`);
      return answer;
    });
    out.rawExportSeconds = exported.ms / 1000;
    out.rawExportCpuMs = exported.cpuMs;
    spreads.rawExport = exported.spread;
    let k = 0;
    const bulk = await bulkMedian(
      `${raw.url}/bulk`,
      () => JSON.stringify({ docs: Array.from({ length: BULK_OPS }, () => bigRow(k++)) }),
      pid,
    );
    out.rawBulkMs = bulk.ms;
    out.rawBulkCpuMs = bulk.cpuMs;
    spreads.rawBulk = bulk.spread;
    const rowsImported = await rounds(pid, (round) => post(`/rows/import?into=rows_${round}`, rows));
    out.rowsImportDocsPerSecond = IMPORT_DOCS / (rowsImported.ms / 1000);
    spreads.rowsImport = rowsImported.spread;
    const rowsBulk = await bulkMedian(
      `${raw.url}/rows/bulk`,
      () => JSON.stringify({ docs: Array.from({ length: BULK_OPS }, () => bigRow(k++)) }),
      pid,
    );
    out.rowsBulkMs = rowsBulk.ms;
    spreads.rowsBulk = rowsBulk.spread;
  }
  if (pouch) {
    const docs = JSON.stringify({ docs: Array.from({ length: IMPORT_DOCS }, (_, i) => bigRow(i)) });
    // A database of its own each round, as Folio imports into a collection of its own.
    const imported = await rounds(undefined, async (round) => {
      await timed(`${pouch.url}/imported${round}`, { method: 'PUT' });
      return timed(`${pouch.url}/imported${round}/_bulk_docs`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: docs,
      });
    });
    out.pouchImportDocsPerSecond = IMPORT_DOCS / (imported.ms / 1000);
    spreads.pouchImport = imported.spread;
    let k = 0;
    const bulk = await bulkMedian(`${pouch.url}/imported0/_bulk_docs`, () =>
      JSON.stringify({ docs: Array.from({ length: BULK_OPS }, () => bigRow(k++)) }),
    );
    out.pouchBulkMs = bulk.ms;
    spreads.pouchBulk = bulk.spread;
  }
  return out;
}

const NA = 'n/a';
const fixed = (value: unknown, digits: number) => (typeof value === 'number' ? value.toFixed(digits) : NA);
const thousands = (value: unknown) =>
  typeof value === 'number' ? Math.round(value).toLocaleString('en') : NA;
function field(record: unknown, ...path: string[]): unknown {
  let at = record;
  for (const name of path) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, name)) return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
}

/** The one-shot workloads as a markdown table (Folio first, then each baseline). */
export function baselineTable(folio: FolioSide, b: Baselines): string[] {
  const streamRows = (field(folio.streams, 'streams') as Array<Record<string, unknown>> | undefined) ?? [];
  const thousand = streamRows.find(
    (r) => String(r.scenario).endsWith('subscribers, 1 collection') && !String(r.scenario).startsWith('1 '),
  );
  const ratio = (a: unknown, c: unknown) =>
    typeof a === 'number' && typeof c === 'number' && c > 0 ? (a / c).toFixed(2) : NA;
  const folioImport = field(folio.transfer, 'importNdjson', 'docsPerSecond');
  const folioExport = field(folio.transfer, 'export_ndjson', 'ms');
  const folioExportSeconds = typeof folioExport === 'number' ? folioExport / 1000 : undefined;
  const folioBulk = field(folio.transfer, 'bulk100Ms', 'median');
  const folioImportCpu = field(folio.transfer, 'importNdjson', 'cpuMicrosPerDoc');
  const folioImportCsv = field(folio.transfer, 'importCsv', 'docsPerSecond');
  const folioImportCsvCpu = field(folio.transfer, 'importCsv', 'cpuMicrosPerDoc');
  const folioExportCpu = field(folio.transfer, 'export_ndjson', 'cpuMs');
  const folioBulkCpu = field(folio.transfer, 'bulk100Ms', 'cpuMsMean');
  return [
    '| workload | unit | Folio | raw better-sqlite3 | Folio ÷ raw | json-server | pouchdb-server | spread across rounds: Folio / raw (/ pouchdb) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| import ${IMPORT_DOCS.toLocaleString('en')} rows (NDJSON, the same documents; pouchdb: \`_bulk_docs\` of the list rows) | docs/s | ${thousands(folioImport)} | ${thousands(b.rawImportDocsPerSecond)} | ${ratio(folioImport, b.rawImportDocsPerSecond)} | ${NA} | ${thousands(b.pouchImportDocsPerSecond)} | ${spreads(field(folio.transfer, 'importNdjson', 'spread'), b.spreads?.rawImport, b.spreads?.pouchImport)} |`,
    `| import ${IMPORT_DOCS.toLocaleString('en')} rows (CSV, the same documents; raw: papaparse) | docs/s | ${thousands(folioImportCsv)} | ${thousands(b.rawImportCsvDocsPerSecond)} | ${ratio(folioImportCsv, b.rawImportCsvDocsPerSecond)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importCsv', 'spread'), b.spreads?.rawImportCsv)} |`,
    `| export ${EXPORT_DOCS.toLocaleString('en')} rows (NDJSON) | s | ${fixed(folioExportSeconds, 2)} | ${fixed(b.rawExportSeconds, 2)} | ${ratio(folioExportSeconds, b.rawExportSeconds)} (time) | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'export_ndjson', 'spread'), b.spreads?.rawExport)} |`,
    `| bulk, ${BULK_OPS} operations in one request | ms, median | ${fixed(folioBulk, 1)} | ${fixed(b.rawBulkMs, 1)} | ${ratio(folioBulk, b.rawBulkMs)} (time) | ${NA} | ${fixed(b.pouchBulkMs, 1)} | ${spreads(field(folio.transfer, 'bulk100Ms', 'spread'), b.spreads?.rawBulk, b.spreads?.pouchBulk)} |`,
    `| import ${IMPORT_DOCS.toLocaleString('en')} rows (NDJSON), beside raw writing Folio's rows (document, version, change; no target) | docs/s | ${thousands(folioImport)} | ${thousands(b.rowsImportDocsPerSecond)} | ${ratio(folioImport, b.rowsImportDocsPerSecond)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importNdjson', 'spread'), b.spreads?.rowsImport)} |`,
    `| bulk, ${BULK_OPS} operations, beside raw writing Folio's rows for ${BULK_OPS} creates (no target) | ms, median | ${fixed(folioBulk, 1)} | ${fixed(b.rowsBulkMs, 1)} | ${ratio(folioBulk, b.rowsBulkMs)} (time) | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'bulk100Ms', 'spread'), b.spreads?.rowsBulk)} |`,
    `| import, server CPU | µs per document | ${fixed(folioImportCpu, 1)} | ${fixed(b.rawImportCpuMicrosPerDoc, 1)} | ${ratio(folioImportCpu, b.rawImportCpuMicrosPerDoc)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importNdjson', 'cpuSpread'), undefined)} |`,
    `| import CSV, server CPU | µs per document | ${fixed(folioImportCsvCpu, 1)} | ${fixed(b.rawImportCsvCpuMicrosPerDoc, 1)} | ${ratio(folioImportCsvCpu, b.rawImportCsvCpuMicrosPerDoc)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importCsv', 'cpuSpread'), undefined)} |`,
    `| export, server CPU | ms | ${fixed(folioExportCpu, 0)} | ${fixed(b.rawExportCpuMs, 0)} | ${ratio(folioExportCpu, b.rawExportCpuMs)} | ${NA} | ${NA} | ${NA} |`,
    `| bulk, server CPU | ms per request, mean | ${fixed(folioBulkCpu, 1)} | ${fixed(b.rawBulkCpuMs, 1)} | ${ratio(folioBulkCpu, b.rawBulkCpuMs)} | ${NA} | ${NA} | ${NA} |`,
    `| change stream, write to event, ${String(field(thousand, 'scenario') ?? '1,000 subscribers')} | p50 / p99 ms | ${fixed(field(thousand, 'p50'), 1)} / ${fixed(field(thousand, 'p99'), 1)} | ${NA} | ${NA} | ${NA} | ${NA} | ${NA} |`,
    `| webhook deliveries, burst into a local receiver | deliveries/s | ${thousands(field(folio.webhooks, 'webhooks', 'deliveriesPerSecond'))} | ${NA} | ${NA} | ${NA} | ${NA} | ${NA} |`,
    '',
    '| target | measured | met |',
    '| --- | ---: | --- |',
    ...judgeOneShot(
      new Map([
        ['import NDJSON', { folio: numberOf(folioImport), raw: b.rawImportDocsPerSecond }],
        ['import CSV', { folio: numberOf(folioImportCsv), raw: b.rawImportCsvDocsPerSecond }],
        ['export NDJSON', { folio: numberOf(folioExportSeconds), raw: b.rawExportSeconds }],
        ['bulk of 100', { folio: numberOf(folioBulk), raw: b.rawBulkMs }],
      ]),
    ).map(oneShotLine),
  ];
}

/** Spreads as percentages, "n/a" where a figure has none (a single round, or not measured). */
const spreads = (...values: unknown[]) =>
  values
    .filter((value, i) => i < 2 || value !== undefined)
    .map((value) =>
      typeof value === 'number' && Number.isFinite(value) ? `${(value * 100).toFixed(0)} %` : NA,
    )
    .join(' / ');

const numberOf = (value: unknown): number | undefined => (typeof value === 'number' ? value : undefined);

/**
 * Alone: the raw better-sqlite3 figures of one run, as JSON. It starts the server itself (not
 * through peerServers.ts, whose import of peers.ts imports this module back).
 */
async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'folio-bench-raw-transfer-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/workloads/rawSqlite.ts'], {
    env: { ...process.env, RAW_DB_DIR: dir, RAW_EXPORT_DOCS: String(EXPORT_DOCS) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        output += String(chunk);
        const found = /listening on (\S+)/.exec(output)?.[1];
        if (found) resolve(found);
      });
      void exited.then(() => reject(new Error(`raw better-sqlite3 exited: ${output}`)));
    });
    const raw: Server = { name: 'raw better-sqlite3', url, child };
    process.stdout.write(`${JSON.stringify(await measureBaselines(raw, null))}\n`);
  } finally {
    child.kill('SIGTERM');
    await exited;
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
