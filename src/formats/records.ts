/**
 * Streaming readers that cut an import body into records, one at a time, so memory never
 * holds more than the record being read. Shared by the import endpoint and by the CLI (which
 * cuts large files into chunks the plan accepts). Text is UTF-8; a leading BOM is dropped.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import JSONParser from '@streamparser/json/jsonparser.js';
import Papa from 'papaparse';

/** The body is not in the format it claims; nothing of it can be read further. */
export class MalformedBodyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MalformedBodyError';
  }
}

/** UTF-8 text from bytes, without the BOM; invalid UTF-8 is a MalformedBodyError. */
export async function* decodeUtf8(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of bytes) {
      const text = decoder.decode(chunk, { stream: true });
      if (text !== '') yield text;
    }
    const rest = decoder.decode();
    if (rest !== '') yield rest;
  } catch (error) {
    if (error instanceof TypeError) throw new MalformedBodyError('The body is not valid UTF-8.');
    throw error;
  }
}

/** One line of NDJSON text: `text` is null when the line was longer than the reader takes. */
export interface TextLine {
  text: string | null;
  line: number;
}

/**
 * Non-blank lines (`\n` or `\r\n`), numbered from 1. A line longer than `maxChars` is yielded
 * with `text: null` and is not held in memory.
 */
export async function* readLines(text: AsyncIterable<string>, maxChars: number): AsyncGenerator<TextLine> {
  let partial = '';
  let tooLong = false;
  let line = 0;
  const finish = (raw: string): TextLine | null => {
    line += 1;
    const content = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (tooLong) return { text: null, line };
    return content.trim() === '' ? null : { text: content, line };
  };
  for await (const chunk of text) {
    let start = 0;
    for (let end = chunk.indexOf('\n'); end !== -1; end = chunk.indexOf('\n', start)) {
      const done = finish(tooLong ? '' : partial + chunk.slice(start, end));
      if (done) yield done;
      partial = '';
      tooLong = false;
      start = end + 1;
    }
    if (!tooLong) {
      partial += chunk.slice(start);
      if (partial.length > maxChars) {
        partial = '';
        tooLong = true;
      }
    }
  }
  if (partial !== '' || tooLong) {
    const done = finish(partial);
    if (done) yield done;
  }
}

/** The elements of a top-level JSON array, parsed as they complete. */
export async function* readJsonArray(text: AsyncIterable<string>): AsyncGenerator<unknown> {
  const parser = new JSONParser({ paths: ['$.*'], keepStack: false });
  const ready: unknown[] = [];
  parser.onValue = ({ value }) => {
    ready.push(value);
  };
  let started = false;
  const feed = (write: () => void) => {
    try {
      write();
    } catch (error) {
      throw new MalformedBodyError(`The body is not a valid JSON array: ${(error as Error).message}`);
    }
  };
  for await (const chunk of text) {
    if (!started) {
      const first = chunk.trimStart()[0];
      if (first === undefined) continue;
      if (first !== '[') throw new MalformedBodyError('The body must be a JSON array of objects.');
      started = true;
    }
    feed(() => parser.write(chunk));
    yield* ready.splice(0);
  }
  if (!started) throw new MalformedBodyError('The body is empty; send a JSON array of objects.');
  // The parser ends by itself after the array's closing bracket; text after it is an error.
  if (!parser.isEnded) feed(() => parser.end());
  yield* ready.splice(0);
}

/** One CSV record: its cells as written, and the line it starts on (1-based). */
export interface CsvRecord {
  cells: string[];
  line: number;
}

/**
 * CSV records (RFC 4180: `,` between fields, `"` quotes, `""` for a quote inside quotes, line
 * breaks inside quotes) parsed by papaparse. Blank lines, and rows whose cells are all empty,
 * are skipped but counted for line numbers. The line ending is the first one in the text.
 */
export async function* readCsv(text: AsyncIterable<string>): AsyncGenerator<CsvRecord> {
  const source = text[Symbol.asyncIterator]();
  try {
    yield* parseCsv(source);
  } finally {
    // The loops below pull `source` by hand, so nothing else hands it back when a consumer
    // stops early (a refused header): without this the request stays bound to an abandoned
    // reader and cannot be drained. Not awaited: a source waiting for bytes must not hold the
    // refusal back.
    Promise.resolve(source.return?.()).catch(() => {});
  }
}

async function* parseCsv(source: AsyncIterator<string>): AsyncGenerator<CsvRecord> {
  // papaparse would guess the line ending from its first chunk, which may end before the first
  // line does; look far enough to see one.
  let head = '';
  // A lone `\r` may be the first half of `\r\n`: read on until the ending is certain.
  while (!/\n|\r[^\n]/.test(head) && head.length < 1 << 20) {
    const next = await source.next();
    if (next.done) break;
    head += next.value;
  }
  if (head === '') return;
  const newline = /\r\n|\n|\r/.exec(head)?.[0] ?? '\n';
  const parser = Papa.parse(Papa.NODE_STREAM_INPUT, {
    delimiter: ',',
    newline: newline as '\r\n' | '\n' | '\r',
    quoteChar: '"',
    escapeChar: '"',
    header: false,
    dynamicTyping: false,
    skipEmptyLines: false,
  });
  async function* rest(): AsyncGenerator<string> {
    yield head;
    for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
  }
  const feeding = pipeline(Readable.from(rest()), parser);
  // The first failure wins: the source's (413, bad UTF-8) reaches the loop through the parser.
  feeding.catch(() => {});
  let line = 1;
  for await (const row of parser as AsyncIterable<string[]>) {
    const start = line;
    line += 1 + row.reduce((breaks, cell) => breaks + lineBreaks(cell), 0);
    if (row.every((cell) => cell === '')) continue;
    yield { cells: row, line: start };
  }
  await feeding;
}

function lineBreaks(cell: string): number {
  const matches = cell.match(/\r\n|\n|\r/g);
  return matches ? matches.length : 0;
}
