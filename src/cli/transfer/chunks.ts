/**
 * A file cut into import requests the plan accepts. Records are read one at a time (the same
 * readers as the server's), grouped into chunks of at most `maxDocs` records and `maxBytes`
 * bytes, and each chunk is sent as a body of its own: CSV with the header repeated, JSON and
 * NDJSON as NDJSON lines.
 */
import Papa from 'papaparse';
import type { TransferFormat } from '../../formats/formats.js';
import { readCsv, readJsonArray, readLines } from '../../formats/records.js';

export interface FileRecord {
  /** The record's text in the chunk body (one CSV row, or one JSON line), without line break. */
  text: string;
  /** The line it starts on in the file; undefined for JSON arrays. */
  line: number | undefined;
  /** Bytes of the file read once this record was complete (for progress). */
  fileBytes: number;
}

export interface ChunkLimits {
  maxDocs: number;
  maxBytes: number;
}

/** NDJSON lines are passed on as they are; none is longer than the server would take anyway. */
const MAX_LINE_CHARS = 256 * 1024 * 1024;

function csvRow(cells: string[]): string {
  return Papa.unparse([cells], { newline: '\r\n', header: false });
}

/** The records of a file, as they will be sent; `header` receives a CSV file's header row. */
export async function* fileRecords(
  format: TransferFormat,
  text: AsyncIterable<string>,
  bytesRead: () => number,
  header: (row: string) => void,
): AsyncGenerator<FileRecord> {
  if (format === 'csv') {
    let first = true;
    for await (const { cells, line } of readCsv(text)) {
      // A quoted field never closed: sent as such (a lone quote), so the server reports it as
      // that record's error, numbered as in the file. It is the file's last record.
      if (!cells) {
        yield { text: '"', line, fileBytes: bytesRead() };
        continue;
      }
      if (first) {
        header(csvRow(cells));
        first = false;
      } else yield { text: csvRow(cells), line, fileBytes: bytesRead() };
    }
  } else if (format === 'ndjson') {
    for await (const { text: line, line: number } of readLines(text, MAX_LINE_CHARS)) {
      yield { text: line ?? '', line: number, fileBytes: bytesRead() };
    }
  } else {
    for await (const value of readJsonArray(text)) {
      yield { text: JSON.stringify(value), line: undefined, fileBytes: bytesRead() };
    }
  }
}

/** The body for a chunk of records. */
export function chunkBody(format: TransferFormat, header: string, records: readonly FileRecord[]): string {
  const newline = format === 'csv' ? '\r\n' : '\n';
  const lines = records.map((r) => `${r.text}${newline}`);
  return `${format === 'csv' ? `${header}${newline}` : ''}${lines.join('')}`;
}

/** Bytes a record adds to a chunk body. */
export function recordBytes(record: FileRecord): number {
  return Buffer.byteLength(record.text) + 2;
}

/** Split `records` into runs that fit `limits` (a single record too large stands alone). */
export function splitToFit(records: FileRecord[], limits: ChunkLimits, headerBytes: number): FileRecord[][] {
  const parts: FileRecord[][] = [];
  let part: FileRecord[] = [];
  let bytes = headerBytes;
  for (const record of records) {
    const size = recordBytes(record);
    if (part.length > 0 && (part.length >= limits.maxDocs || bytes + size > limits.maxBytes)) {
      parts.push(part);
      part = [];
      bytes = headerBytes;
    }
    part.push(record);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}
