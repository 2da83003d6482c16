/**
 * `folio export`: stream `GET /{ns}/{collection}/_export` to a file (written under a temporary
 * name and renamed when complete, so a failed export never leaves a file that looks whole) or
 * to standard output.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { formatOfFileName, MEDIA_TYPES } from '../../formats/formats.js';
import { apiError, send } from './http.js';
import {
  CONNECTION_HELP,
  CommandFailure,
  connection,
  formatOption,
  parseCommandArgs,
  UsageError,
} from './options.js';
import { startProgress, summaryLine } from './progress.js';

export const EXPORT_HELP = `Usage: folio export -c COLLECTION [options]

Export a collection (or the part the filters select) as JSON, CSV or NDJSON.

${CONNECTION_HELP}

Options:
  -o, --out FILE            write to FILE (default: standard output)
  -f, --format F            json, csv or ndjson (default: from --out's extension, else json)
  --filter 'FIELD[OP]=V'    keep matching documents; repeatable (AND). OP is one of eq, neq,
                            gt, gte, lt, lte, contains, in, exists; 'FIELD=V' means eq
  --sort=FIELDS             e.g. --sort=-age,name (a leading - sorts descending)
  --no-formula-escape       CSV: write cells exactly as stored (for programs, and for a file
                            to import again); by default a text cell starting with = + - @
                            tab or CR gets a leading ' so a spreadsheet does not run it
  -h, --help                this help

An export larger than the plan allows is refused (403, with the number that match): narrow
it with filters. On a terminal a progress bar shows documents, bytes, rate and ETA; otherwise
one JSON line {"ok","documents","bytes","ms"} is printed (to stderr when the export goes to
standard output). Exit code 0 on success, 1 on failure, 2 for a usage error.
`;

/** `age[gte]=30` → ['filter[age][gte]', '30']; `city=Paris` → ['filter[city]', 'Paris']. */
export function filterParam(expression: string): [string, string] {
  const eq = expression.indexOf('=');
  if (eq <= 0) throw new UsageError(`--filter '${expression}': expected FIELD=VALUE or FIELD[OP]=VALUE`);
  const left = expression.slice(0, eq);
  const bracket = left.indexOf('[');
  const key = bracket === -1 ? `filter[${left}]` : `filter[${left.slice(0, bracket)}]${left.slice(bracket)}`;
  return [key, expression.slice(eq + 1)];
}

export async function exportCommand(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, {
    out: { type: 'string', short: 'o' },
    filter: { type: 'string', multiple: true },
    sort: { type: 'string' },
    'no-formula-escape': { type: 'boolean' },
  });
  if (values.help) {
    process.stdout.write(EXPORT_HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (!values.collection) throw new UsageError('a collection is needed: -c COLLECTION');
  const out = values.out;
  const format = formatOption(values.format) ?? (out ? formatOfFileName(out) : undefined) ?? 'json';
  const conn = connection(values, env);
  const query = new URLSearchParams();
  for (const expression of values.filter ?? []) query.append(...filterParam(expression));
  if (values.sort) query.set('sort', values.sort);
  if (values['no-formula-escape']) query.set('formulaEscape', 'false');
  const path = `/${encodeURIComponent(conn.project)}/${encodeURIComponent(values.collection)}/_export${query.size ? `?${query}` : ''}`;

  const interactive = Boolean(process.stderr.isTTY);
  const started = Date.now();
  const res = await send(conn, path, { headers: { Accept: MEDIA_TYPES[format] } });
  if (res.status !== 200 || !res.body) {
    const error = await apiError(res);
    throw new CommandFailure(`${res.status} ${error.code}: ${error.message}`);
  }
  const total = Number(res.headers.get('x-total-count')) || 0;
  const progress = startProgress('exporting', total, interactive);
  let bytes = 0;
  let docs = 0;
  // Counting documents by their separators: one per line (NDJSON), per top-level line of the
  // JSON array, per CSV row (a CSV cell holding a line break makes this an estimate).
  const count = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) docs += 1;
      progress.update(Math.min(docs, total), Math.min(docs, total), bytes);
      done(null, chunk);
    },
  });
  const partial = out ? `${out}.partial` : null;
  try {
    const source = Readable.fromWeb(res.body as Parameters<typeof Readable.fromWeb>[0]);
    if (partial && out) {
      await pipeline(source, count, createWriteStream(partial));
      await rename(partial, out);
    } else {
      await pipeline(source, count, process.stdout, { end: false });
    }
  } catch (error) {
    if (partial) await rm(partial, { force: true });
    throw new CommandFailure(`the export broke off after ${bytes} bytes: ${(error as Error).message}`);
  } finally {
    progress.stop();
  }
  const summary = { ok: true, documents: total, bytes, ms: Date.now() - started, ...(out ? { out } : {}) };
  const sentence = `${total} documents, ${bytes} bytes exported${out ? ` to ${out}` : ''}`;
  (out ? process.stdout : process.stderr).write(summaryLine(summary, interactive, sentence));
  return 0;
}
