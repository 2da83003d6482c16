/**
 * An import body as records, one at a time, within the plan: more bytes than the plan takes is
 * 413 and more records than it takes is 403, both raised while reading, before anything is
 * written. A record that cannot be read (a bad NDJSON line, a ragged CSV row) is yielded as an
 * error, so the rest of the body is still imported.
 */
import { type AppError, badRequest, payloadTooLarge, planLimitExceeded } from '../../errors.js';
import { CsvHeaderError, CsvRowError, parseHeader, rowToDocument } from '../../formats/csvDocument.js';
import type { TransferFormat } from '../../formats/formats.js';
import { decodeUtf8, MalformedBodyError, readCsv, readJsonArray, readLines } from '../../formats/records.js';

export interface SourceLimits {
  maxBytes: number;
  maxRecords: number;
  plan: string;
  /** An NDJSON line longer than this is reported as too large without being held in memory. */
  maxRecordChars: number;
}

export interface SourceRecord {
  index: number;
  line?: number | undefined;
  value?: unknown;
  error?: { code: string; message: string };
}

export function importTooLarge(bytes: number, max: number, plan: string): AppError {
  return payloadTooLarge(`The ${plan} plan imports at most ${max} bytes per request; send smaller parts.`, {
    limit: 'importBytes',
    max,
    plan,
    ...(Number.isFinite(bytes) ? { bytes } : {}),
  });
}

async function* countBytes(
  body: AsyncIterable<Uint8Array>,
  limits: SourceLimits,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > limits.maxBytes) throw importTooLarge(Number.NaN, limits.maxBytes, limits.plan);
    yield chunk;
  }
}

type Parsed = Omit<SourceRecord, 'index'>;

async function* parse(
  format: TransferFormat,
  text: AsyncIterable<string>,
  maxChars: number,
): AsyncGenerator<Parsed> {
  if (format === 'json') {
    for await (const value of readJsonArray(text)) yield { value };
  } else if (format === 'ndjson') {
    for await (const { text: line, line: number } of readLines(text, maxChars)) {
      if (line === null) {
        yield {
          line: number,
          error: { code: 'payload_too_large', message: `Line is over ${maxChars} characters.` },
        };
        continue;
      }
      try {
        yield { line: number, value: JSON.parse(line) };
      } catch (error) {
        yield { line: number, error: { code: 'invalid_json', message: (error as Error).message } };
      }
    }
  } else {
    let columns: ReturnType<typeof parseHeader> | null = null;
    for await (const record of readCsv(text, maxChars)) {
      const { line } = record;
      if (record.cells === undefined) {
        if (!columns)
          throw new CsvHeaderError(`The header row (line ${line}) cannot be read: ${record.message}`);
        const code = record.problem === 'too_large' ? 'payload_too_large' : 'invalid_row';
        yield { line, error: { code, message: record.message } };
        continue;
      }
      const { cells } = record;
      if (!columns) {
        columns = parseHeader(cells);
        continue;
      }
      try {
        yield { line, value: rowToDocument(columns, cells) };
      } catch (error) {
        if (!(error instanceof CsvRowError)) throw error;
        yield { line, error: { code: 'invalid_row', message: error.message } };
      }
    }
  }
}

/** The records of `body`, numbered from 0, within the plan's limits. */
export async function* readImportBody(
  body: AsyncIterable<Uint8Array>,
  format: TransferFormat,
  limits: SourceLimits,
): AsyncGenerator<SourceRecord> {
  let index = 0;
  try {
    for await (const record of parse(format, decodeUtf8(countBytes(body, limits)), limits.maxRecordChars)) {
      if (index >= limits.maxRecords)
        throw planLimitExceeded('importDocuments', limits.maxRecords, limits.plan);
      yield { index, ...record };
      index += 1;
    }
  } catch (error) {
    if (error instanceof MalformedBodyError || error instanceof CsvHeaderError)
      throw badRequest(error.message);
    throw error;
  }
}
