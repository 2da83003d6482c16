/**
 * `folio import FILE`: send a file to `POST /{ns}/{collection}/_import`, cut into requests the
 * key's plan accepts. The server says its limits on every import answer (X-Import-Max-*); the
 * first request is small, the next ones as large as the plan allows. 429s are waited out.
 *
 * Each request is a whole import of its own (checked, then committed in batches), so when one
 * fails the requests before it are in and the rest are not: the summary says how many records
 * were settled, and a re-run with --on-conflict skip resumes (records with ids are skipped).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { formatOfFileName, MEDIA_TYPES, type TransferFormat } from '../../formats/formats.js';
import { decodeUtf8 } from '../../formats/records.js';
import {
  type ChunkLimits,
  chunkBody,
  type FileRecord,
  fileRecords,
  recordBytes,
  splitToFit,
} from './chunks.js';
import { apiError, send } from './http.js';
import {
  CONNECTION_HELP,
  CommandFailure,
  type Connection,
  connection,
  formatOption,
  parseCommandArgs,
  UsageError,
} from './options.js';
import { startProgress, summaryLine } from './progress.js';

export const IMPORT_HELP = `Usage: folio import FILE [options]

Import a JSON array, CSV (header row) or NDJSON file into a collection. Files larger than the
key's plan accepts in one request are sent in parts it accepts.

${CONNECTION_HELP} (default: the file name without extension)

Options:
  -f, --format F       json, csv or ndjson (default: from the file name: .json .csv .ndjson .jsonl)
  --on-conflict MODE   fail (default), skip or overwrite, for ids that already exist
  --id-field FIELD     field holding the document id (default _id)
  -h, --help           this help

On a terminal a progress bar shows documents, bytes, rate and ETA; otherwise one JSON line
{"ok",...,"imported","skipped","failed","total","errors":[...]} is printed. Exit code 0 when
every record was imported or skipped, 1 otherwise, 2 for a usage error.
`;

/** The first request is small: the answer tells the plan's limits for the next ones. */
const FIRST_CHUNK: ChunkLimits = { maxDocs: 100, maxBytes: 256 * 1024 };
/** Room left under the byte limit for what the estimate does not count. */
const BYTE_MARGIN = 0.98;
/** Errors listed in the summary (the count is always complete). */
const LISTED_ERRORS = 50;

interface ImportErrorEntry {
  index: number;
  line?: number;
  _id?: string;
  code: string;
  message: string;
}

interface Totals {
  imported: number;
  skipped: number;
  errors: ImportErrorEntry[];
  failed: number;
  total: number;
  requests: number;
}

interface Plan {
  conn: Connection;
  path: string;
  format: TransferFormat;
  header: string;
}

export async function importCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    'on-conflict': { type: 'string' },
    'id-field': { type: 'string' },
  });
  if (values.help) {
    process.stdout.write(IMPORT_HELP);
    return 0;
  }
  const file = positionals[0];
  if (!file || positionals.length > 1) throw new UsageError('give exactly one FILE to import');
  const format = formatOption(values.format) ?? formatOfFileName(file);
  if (!format) throw new UsageError(`cannot tell the format of ${file}: use --format json|csv|ndjson`);
  const collection = values.collection ?? basename(file).replace(/\.[^.]*$/, '');
  const conn = connection(values, env);
  const onConflict = values['on-conflict'] ?? 'fail';
  if (!['fail', 'skip', 'overwrite'].includes(onConflict)) {
    throw new UsageError('--on-conflict must be fail, skip or overwrite');
  }
  const query = new URLSearchParams({ onConflict });
  if (values['id-field']) query.set('idField', values['id-field']);
  const size = (await stat(file)).size;
  const plan: Plan = {
    conn,
    path: `/${encodeURIComponent(conn.project)}/${encodeURIComponent(collection)}/_import?${query}`,
    format,
    header: '',
  };
  return run(plan, file, size, values['on-conflict'] === undefined ? 'fail' : onConflict);
}

async function run(plan: Plan, file: string, size: number, onConflict: string): Promise<number> {
  const interactive = Boolean(process.stderr.isTTY);
  const progress = startProgress('importing', size, interactive);
  const totals: Totals = { imported: 0, skipped: 0, errors: [], failed: 0, total: 0, requests: 0 };
  const started = Date.now();
  let limits = FIRST_CHUNK;
  let bytesRead = 0;
  let failure: string | null = null;
  const input = createReadStream(file);
  input.on('data', (chunk) => {
    bytesRead += chunk.length;
  });
  const records = fileRecords(
    plan.format,
    decodeUtf8(input),
    () => bytesRead,
    (row) => {
      plan.header = row;
    },
  );
  let pending: FileRecord[] = [];
  let pendingBytes = 0;
  const flush = async () => {
    limits = await sendChunk(plan, pending, limits, totals, (s) =>
      progress.note(`rate limited: waiting ${s} s`),
    );
    progress.update(
      pending.at(-1)?.fileBytes ?? bytesRead,
      totals.imported + totals.skipped,
      pending.at(-1)?.fileBytes ?? bytesRead,
    );
    pending = [];
    pendingBytes = 0;
  };
  try {
    for await (const record of records) {
      const headerBytes = Buffer.byteLength(plan.header) + 2;
      const bytes = recordBytes(record);
      if (
        pending.length > 0 &&
        (pending.length >= limits.maxDocs || headerBytes + pendingBytes + bytes > limits.maxBytes)
      ) {
        await flush();
      }
      pending.push(record);
      pendingBytes += bytes;
    }
    if (pending.length > 0) await flush();
  } catch (error) {
    if (!(error instanceof CommandFailure)) throw error;
    failure = error.message;
  } finally {
    input.destroy();
    progress.stop();
  }
  const ok = failure === null && totals.failed === 0;
  const summary = {
    ok,
    imported: totals.imported,
    skipped: totals.skipped,
    failed: totals.failed,
    total: totals.total,
    requests: totals.requests,
    ms: Date.now() - started,
    errors: totals.errors.slice(0, LISTED_ERRORS),
    ...(failure ? { error: failure, resume: resumeHint(onConflict) } : {}),
  };
  const sentence =
    `${totals.imported} imported, ${totals.skipped} skipped, ${totals.failed} failed of ${totals.total} records ` +
    `in ${totals.requests} request(s)${failure ? `; stopped: ${failure}. ${resumeHint(onConflict)}` : ''}`;
  if (failure) process.stderr.write(`folio: ${failure}\n`);
  process.stdout.write(summaryLine(summary, interactive, sentence));
  if (interactive) {
    for (const e of summary.errors)
      process.stderr.write(
        `  record ${e.index}${e.line ? ` (line ${e.line})` : ''}: ${e.code}: ${e.message}\n`,
      );
  }
  return ok ? 0 : 1;
}

function resumeHint(onConflict: string): string {
  return onConflict === 'overwrite'
    ? 'Run the same command again to finish (records are overwritten again).'
    : 'Records before the failed request are imported; run again with --on-conflict skip to import the rest (records without ids would be imported twice).';
}

/**
 * Send one chunk (more if the plan turns out smaller than assumed); returns the limits the
 * server announced for the next chunks. Throws CommandFailure when the server refuses it.
 */
async function sendChunk(
  plan: Plan,
  records: FileRecord[],
  limits: ChunkLimits,
  totals: Totals,
  onWait: (seconds: number) => void,
): Promise<ChunkLimits> {
  const headerBytes = Buffer.byteLength(plan.header) + 2;
  let next = limits;
  for (const part of splitToFit(records, limits, headerBytes)) {
    const res = await send(
      plan.conn,
      plan.path,
      {
        method: 'POST',
        headers: { 'Content-Type': MEDIA_TYPES[plan.format === 'json' ? 'ndjson' : plan.format] },
        body: chunkBody(plan.format, plan.header, part),
      },
      onWait,
    );
    totals.requests += 1;
    const announced = announcedLimits(res.headers);
    if (res.status === 200) {
      addResult(totals, (await res.json()) as Omit<Totals, 'failed' | 'requests'>, part);
      next = announced ?? next;
      continue;
    }
    const error = await apiError(res);
    const tooBig =
      (res.status === 403 && error.details?.limit === 'importDocuments') ||
      (res.status === 413 && error.details?.limit === 'importBytes');
    // Nothing was written: send the same records again in parts of the announced size.
    if (tooBig && announced && (announced.maxDocs < part.length || part.length > 1)) {
      next = await sendChunk(plan, part, announced, totals, onWait);
      continue;
    }
    const where = `records ${totals.total}-${totals.total + part.length - 1}`;
    throw new CommandFailure(`${where}: ${res.status} ${error.code}: ${error.message}`);
  }
  return next;
}

function announcedLimits(headers: Headers): ChunkLimits | null {
  const maxDocs = Number(headers.get('x-import-max-documents'));
  const maxBytes = Number(headers.get('x-import-max-bytes'));
  if (!(maxDocs > 0 && maxBytes > 0)) return null;
  return { maxDocs, maxBytes: Math.floor(maxBytes * BYTE_MARGIN) };
}

/** Fold one request's result in, with its error entries numbered as in the whole file. */
function addResult(totals: Totals, result: Omit<Totals, 'failed' | 'requests'>, part: FileRecord[]): void {
  const offset = totals.total;
  totals.imported += result.imported;
  totals.skipped += result.skipped;
  totals.failed += result.errors.length;
  for (const e of result.errors) {
    if (totals.errors.length >= LISTED_ERRORS) break;
    const line = part[e.index]?.line;
    const { line: _chunkLine, ...rest } = e;
    totals.errors.push({ ...rest, index: offset + e.index, ...(line === undefined ? {} : { line }) });
  }
  totals.total += result.total;
}
