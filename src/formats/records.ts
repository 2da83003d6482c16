/**
 * Streaming readers that cut an import body into records, one at a time, so memory never
 * holds more than the record being read. Shared by the import endpoint and by the CLI (which
 * cuts large files into chunks the plan accepts). Text is UTF-8; a leading BOM is dropped.
 */
import { setImmediate } from 'node:timers/promises';
import JSONParser from '@streamparser/json/jsonparser.js';
import { type CsvRecord, CsvTokenizer } from './csvTokenizer.js';

export type { CsvRecord } from './csvTokenizer.js';

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

/**
 * @streamparser/json (0.0.26) decodes each run of a string's bytes with a TextDecoder that drops
 * a leading U+FEFF, as if it were a byte order mark, so `"\ufeffx"` (escaped or not) and a
 * U+FEFF after an escape came out without it. The one decoder its string builder uses is
 * replaced by one that keeps it. Checked when a parser is made: if the library's insides change,
 * every JSON import fails loudly (and its tests) rather than losing characters.
 */
function keepingByteOrderMarks(parser: JSONParser): JSONParser {
  const builder = (parser as unknown as { tokenizer?: { bufferedString?: { decoder?: unknown } } }).tokenizer
    ?.bufferedString;
  if (!(builder?.decoder instanceof TextDecoder)) {
    throw new Error('@streamparser/json changed: its string decoder was not found');
  }
  builder.decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  return parser;
}

/** The elements of a top-level JSON array, parsed as they complete. */
export async function* readJsonArray(text: AsyncIterable<string>): AsyncGenerator<unknown> {
  const parser = keepingByteOrderMarks(new JSONParser({ paths: ['$.*'], keepStack: false }));
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

/** Characters of CSV read between two turns given back to the event loop. */
export const CSV_CHARS_PER_TURN = 64 * 1024;

/**
 * CSV records (RFC 4180, in papaparse's dialect: see csvTokenizer.ts) in time linear in the
 * text. Blank lines, and rows whose cells are all empty, are skipped but counted for line
 * numbers. A record over `maxRecordChars` and a quoted field never closed come as problem
 * records, so the reader can report them and go on. Every CSV_CHARS_PER_TURN characters the
 * event loop gets a turn, so a large body never holds up other requests (a body already
 * buffered would otherwise be read in one go).
 */
export async function* readCsv(
  text: AsyncIterable<string>,
  maxRecordChars = Number.POSITIVE_INFINITY,
): AsyncGenerator<CsvRecord> {
  const tokenizer = new CsvTokenizer(maxRecordChars);
  let sinceTurn = 0;
  for await (const chunk of text) {
    for (const record of tokenizer.push(chunk)) if (kept(record)) yield record;
    sinceTurn += chunk.length;
    if (sinceTurn >= CSV_CHARS_PER_TURN) {
      sinceTurn = 0;
      await setImmediate();
    }
  }
  for (const record of tokenizer.end()) if (kept(record)) yield record;
}

/** Problem records, and rows with a non-empty cell. */
function kept(record: CsvRecord): boolean {
  return record.cells === undefined || record.cells.some((cell) => cell !== '');
}
