/**
 * Documents → export text, streamed: each writer turns an async sequence of documents into
 * text chunks of about CHUNK_CHARS, so a response is sent while the cursor is still being read
 * and memory holds one chunk.
 */
import Papa from 'papaparse';
import type { JsonObject } from '../store/port.js';
import { type CellOptions, escapeFormula } from './csvCells.js';
import { RowWriter } from './csvDocument.js';

const CHUNK_CHARS = 64 * 1024;
/** CSV rows handed to papaparse at once. */
const CSV_ROWS_PER_CALL = 256;

/** RFC 4180 line ending; papaparse quotes any cell holding a comma, a quote or a line break. */
const CSV_NEWLINE = '\r\n';

async function* chunked(pieces: AsyncIterable<string>): AsyncGenerator<string> {
  let buffer = '';
  for await (const piece of pieces) {
    buffer += piece;
    if (buffer.length >= CHUNK_CHARS) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer !== '') yield buffer;
}

async function* jsonArray(docs: AsyncIterable<JsonObject>): AsyncGenerator<string> {
  let first = true;
  yield '[';
  for await (const doc of docs) {
    yield `${first ? '\n' : ',\n'}${JSON.stringify(doc)}`;
    first = false;
  }
  yield first ? ']\n' : '\n]\n';
}

async function* ndjson(docs: AsyncIterable<JsonObject>): AsyncGenerator<string> {
  for await (const doc of docs) yield `${JSON.stringify(doc)}\n`;
}

/**
 * NDJSON or a JSON array from documents already serialised (DocumentRepository.scanJson), pages
 * of them: the same text `writeDocuments` gives for those documents, one chunk per page or more.
 */
export async function* writeJsonTexts(
  format: 'ndjson' | 'json',
  pages: AsyncIterable<string[]>,
): AsyncGenerator<string> {
  let buffer = format === 'json' ? '[' : '';
  let first = true;
  for await (const page of pages) {
    if (page.length === 0) continue;
    if (format === 'ndjson') buffer += `${page.join('\n')}\n`;
    else {
      buffer += `${first ? '\n' : ',\n'}${page.join(',\n')}`;
      first = false;
    }
    if (buffer.length >= CHUNK_CHARS) {
      yield buffer;
      buffer = '';
    }
  }
  if (format === 'json') buffer += first ? ']\n' : '\n]\n';
  if (buffer !== '') yield buffer;
}

function csvLines(rows: string[][]): string {
  return `${Papa.unparse(rows, { newline: CSV_NEWLINE, header: false })}${CSV_NEWLINE}`;
}

async function* csv(
  pages: AsyncIterable<readonly JsonObject[]>,
  columns: readonly string[],
  options: CellOptions,
): AsyncGenerator<string> {
  // Column names are user field names, so a header cell can hold a formula too.
  yield csvLines([columns.map((name) => (options.formulaEscape ? escapeFormula(name) : name))]);
  const writer = new RowWriter(columns, options);
  let rows: string[][] = [];
  for await (const page of pages) {
    for (const doc of page) {
      rows.push(writer.row(doc));
      if (rows.length >= CSV_ROWS_PER_CALL) {
        yield csvLines(rows);
        rows = [];
      }
    }
  }
  if (rows.length > 0) yield csvLines(rows);
}

/** Documents in pages of up to CSV_ROWS_PER_CALL, for writers that take pages. */
export async function* pagesOf(docs: AsyncIterable<JsonObject>): AsyncGenerator<JsonObject[]> {
  let page: JsonObject[] = [];
  for await (const doc of docs) {
    page.push(doc);
    if (page.length >= CSV_ROWS_PER_CALL) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/**
 * CSV from documents in pages (a store's scanJson pages, parsed, or `pagesOf` a scan), without a
 * step of the async iteration per document. CSV needs its columns up front (the union over all
 * documents, see csvDocument.ts); cells a spreadsheet would run are neutralised unless
 * `formulaEscape` is false (csvCells.ts).
 */
export function writeCsvPages(
  pages: AsyncIterable<readonly JsonObject[]>,
  columns: readonly string[],
  options: CellOptions = { formulaEscape: true },
): AsyncGenerator<string> {
  return chunked(csv(pages, columns, options));
}

/** The JSON or NDJSON export text of `docs`, in chunks, from the first document on (CSV: writeCsvPages). */
export function writeDocuments(
  format: 'ndjson' | 'json',
  docs: AsyncIterable<JsonObject>,
): AsyncGenerator<string> {
  return chunked(format === 'json' ? jsonArray(docs) : ndjson(docs));
}
