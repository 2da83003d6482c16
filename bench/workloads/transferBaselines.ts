/**
 * The peer bench's one-shot workloads, Folio beside the baselines of the same run: import of
 * 25,000 NDJSON rows, export of 250,000, a bulk request of 100 operations, change-stream
 * write-to-event latency with 1,000 subscribers, webhook deliveries per second.
 *
 * Folio's figures come from bench/transfer.ts, bench/streams.ts and bench/webhooks.ts (run
 * as children by bench/run.ts). raw better-sqlite3's import, export and bulk come from
 * bench/transfer.ts too, which measures them in turn with Folio's, round for round; the
 * pouchdb-server figures are measured here, on the server the peer bench has started. A system
 * with no equivalent endpoint reads "n/a".
 */

import type { Server } from '../peers.js';
import { median } from '../stats.js';
import { judgeOneShot, type OneShotVerdict, oneShotLine, spread } from '../storageTargets.js';
import { BULK_OPS, BULK_ROUNDS, BULK_WARMUP, bigRow, EXPORT_DOCS, IMPORT_DOCS } from './rows.js';

/** As bench/transfer.ts measures Folio and raw: rounds of each one-shot workload. */
const ROUNDS = 3;

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
  /** raw better-sqlite3 writing Folio's rows (a new document's row and its change) for each document. */
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

/** Bulk requests timed after a warm-up: the median time, and how far the times spread. */
async function bulkMedian(url: string, body: () => string): Promise<{ ms: number; spread: number }> {
  const times: number[] = [];
  for (let round = 0; round < BULK_WARMUP + BULK_ROUNDS; round++) {
    const { ms } = await timed(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: body(),
    });
    if (round >= BULK_WARMUP) times.push(ms);
  }
  return { ms: median(times), spread: spread(times) };
}

/** `ROUNDS` imports of the same rows: the median time, and how far the times spread. */
async function rounds(
  once: (round: number) => Promise<{ ms: number }>,
): Promise<{ ms: number; spread: number }> {
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) times.push((await once(round)).ms);
  return { ms: median(times), spread: spread(times) };
}

/** raw better-sqlite3's figures as bench/transfer.ts measured them, in turn with Folio's. */
export function rawBaselines(transfer: Record<string, unknown> | undefined): Baselines {
  const of = (workload: string, name: string) => numberOf(field(transfer, 'raw', workload, name));
  const perSecond = (ms: number | undefined) => (ms === undefined ? undefined : IMPORT_DOCS / (ms / 1000));
  const perDoc = (cpuMs: number | undefined) =>
    cpuMs === undefined ? undefined : (cpuMs * 1000) / IMPORT_DOCS;
  const exportMs = of('exportNdjson', 'ms');
  const spreads: Record<string, number> = {};
  for (const [name, workload] of [
    ['rawImport', 'importNdjson'],
    ['rawImportCsv', 'importCsv'],
    ['rawExport', 'exportNdjson'],
    ['rawBulk', 'bulk'],
    ['rowsImport', 'rowsImport'],
    ['rowsBulk', 'rowsBulk'],
  ] as const) {
    const value = of(workload, 'spread');
    if (value !== undefined) spreads[name] = value;
  }
  return {
    spreads,
    rawImportDocsPerSecond: perSecond(of('importNdjson', 'ms')),
    rawImportCpuMicrosPerDoc: perDoc(of('importNdjson', 'cpuMs')),
    rawImportCsvDocsPerSecond: perSecond(of('importCsv', 'ms')),
    rawImportCsvCpuMicrosPerDoc: perDoc(of('importCsv', 'cpuMs')),
    rawExportSeconds: exportMs === undefined ? undefined : exportMs / 1000,
    rawExportCpuMs: of('exportNdjson', 'cpuMs'),
    rawBulkMs: of('bulk', 'ms'),
    rawBulkCpuMs: of('bulk', 'cpuMsMean'),
    rowsImportDocsPerSecond: perSecond(of('rowsImport', 'ms')),
    rowsBulkMs: of('rowsBulk', 'ms'),
  };
}

/** pouchdb-server's import and bulk, on the server the peer bench started. */
export async function measureBaselines(pouch: Server | null): Promise<Baselines> {
  const out: Baselines = {};
  const spreads: Record<string, number> = {};
  out.spreads = spreads;
  if (pouch) {
    const docs = JSON.stringify({ docs: Array.from({ length: IMPORT_DOCS }, (_, i) => bigRow(i)) });
    // A database of its own each round, as Folio imports into a collection of its own.
    const imported = await rounds(async (round) => {
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
    `| import ${IMPORT_DOCS.toLocaleString('en')} rows (NDJSON), beside raw writing Folio's rows (document and change; no target) | docs/s | ${thousands(folioImport)} | ${thousands(b.rowsImportDocsPerSecond)} | ${ratio(folioImport, b.rowsImportDocsPerSecond)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importNdjson', 'spread'), b.spreads?.rowsImport)} |`,
    `| bulk, ${BULK_OPS} operations, beside raw writing Folio's rows for the same operations (no target) | ms, median | ${fixed(folioBulk, 1)} | ${fixed(b.rowsBulkMs, 1)} | ${ratio(folioBulk, b.rowsBulkMs)} (time) | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'bulk100Ms', 'spread'), b.spreads?.rowsBulk)} |`,
    `| import, server CPU | µs per document | ${fixed(folioImportCpu, 1)} | ${fixed(b.rawImportCpuMicrosPerDoc, 1)} | ${ratio(folioImportCpu, b.rawImportCpuMicrosPerDoc)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importNdjson', 'cpuSpread'), undefined)} |`,
    `| import CSV, server CPU | µs per document | ${fixed(folioImportCsvCpu, 1)} | ${fixed(b.rawImportCsvCpuMicrosPerDoc, 1)} | ${ratio(folioImportCsvCpu, b.rawImportCsvCpuMicrosPerDoc)} | ${NA} | ${NA} | ${spreads(field(folio.transfer, 'importCsv', 'cpuSpread'), undefined)} |`,
    `| export, server CPU | ms | ${fixed(folioExportCpu, 0)} | ${fixed(b.rawExportCpuMs, 0)} | ${ratio(folioExportCpu, b.rawExportCpuMs)} | ${NA} | ${NA} | ${NA} |`,
    `| bulk, server CPU | ms per request, mean | ${fixed(folioBulkCpu, 1)} | ${fixed(b.rawBulkCpuMs, 1)} | ${ratio(folioBulkCpu, b.rawBulkCpuMs)} | ${NA} | ${NA} | ${NA} |`,
    `| change stream, write to event, ${String(field(thousand, 'scenario') ?? '1,000 subscribers')} | p50 / p99 ms | ${fixed(field(thousand, 'p50'), 1)} / ${fixed(field(thousand, 'p99'), 1)} | ${NA} | ${NA} | ${NA} | ${NA} | ${NA} |`,
    `| webhook deliveries, burst into a local receiver | deliveries/s | ${thousands(field(folio.webhooks, 'webhooks', 'deliveriesPerSecond'))} | ${NA} | ${NA} | ${NA} | ${NA} | ${NA} |`,
    '',
    '| target | measured | met |',
    '| --- | ---: | --- |',
    ...oneShotVerdicts(folio, b).map(oneShotLine),
  ];
}

/** The one-shot targets judged: Folio's import, export and bulk against raw's of the same run. */
export function oneShotVerdicts(folio: FolioSide, b: Baselines): OneShotVerdict[] {
  const figure = (...path: string[]) => numberOf(field(folio.transfer, ...path));
  const exportMs = figure('export_ndjson', 'ms');
  return judgeOneShot(
    new Map([
      ['import NDJSON', { folio: figure('importNdjson', 'docsPerSecond'), raw: b.rawImportDocsPerSecond }],
      ['import CSV', { folio: figure('importCsv', 'docsPerSecond'), raw: b.rawImportCsvDocsPerSecond }],
      [
        'export NDJSON',
        { folio: exportMs === undefined ? undefined : exportMs / 1000, raw: b.rawExportSeconds },
      ],
      ['bulk of 100', { folio: figure('bulk100Ms', 'median'), raw: b.rawBulkMs }],
    ]),
  );
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
