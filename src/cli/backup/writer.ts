/**
 * Writing a backup file (format.ts) from a store's snapshot. The file is written under a
 * temporary name beside the target and renamed into place once its trailer is on disk, so a
 * backup that fails or is interrupted never leaves a file under the name asked for.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { open, rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import type { SnapshotRecord, SnapshotRecordType } from '../../store/port.js';
import { FOLIO_VERSION } from '../../version.js';
import {
  BACKUP_FORMAT,
  BACKUP_VERSION,
  type BackupHeader,
  type BackupTrailer,
  headerLine,
  trailerLine,
} from './format.js';

export interface WriteBackupOptions {
  source: BackupHeader['source'];
  /** Compress the whole file with gzip. */
  gzip: boolean;
  /** Called after each record, with the number written so far. */
  onRecord?: (written: number) => void;
}

/** Lines of the file: header, records, trailer; the trailer's checksum covers the lines before it. */
async function* backupLines(
  records: AsyncIterable<SnapshotRecord>,
  options: WriteBackupOptions,
  result: { trailer?: BackupTrailer },
): AsyncGenerator<string> {
  const hash = createHash('sha256');
  const header = headerLine({
    format: BACKUP_FORMAT,
    version: BACKUP_VERSION,
    createdAt: new Date().toISOString(),
    folio: FOLIO_VERSION,
    source: options.source,
  });
  hash.update(header);
  yield header;
  const counts: Partial<Record<SnapshotRecordType, number>> = {};
  let written = 0;
  for await (const record of records) {
    const line = `${JSON.stringify(record)}\n`;
    hash.update(line);
    counts[record.type] = (counts[record.type] ?? 0) + 1;
    written++;
    yield line;
    options.onRecord?.(written);
  }
  const trailer: BackupTrailer = { end: BACKUP_FORMAT, records: written, counts, sha256: hash.digest('hex') };
  result.trailer = trailer;
  yield trailerLine(trailer);
}

/** Write `records` to `file` as a backup; returns the trailer written. */
export async function writeBackup(
  records: AsyncIterable<SnapshotRecord>,
  file: string,
  options: WriteBackupOptions,
): Promise<BackupTrailer> {
  const partial = `${file}.partial-${process.pid}`;
  const result: { trailer?: BackupTrailer } = {};
  const lines = Readable.from(backupLines(records, options, result));
  // Secrets inside (key hashes, password hashes, the webhook sealing key): owner-only.
  const out = createWriteStream(partial, { mode: 0o600, flags: 'wx' });
  try {
    if (options.gzip) await pipeline(lines, createGzip(), out);
    else await pipeline(lines, out);
    // On disk before it takes the name: a crash right after never leaves a half-written backup.
    const handle = await open(partial, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(partial, file);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  // The pipeline finished, so the generator ran to its end and set the trailer.
  return result.trailer as BackupTrailer;
}
