/**
 * The backup file format, version 1 (specified in docs/operations.md): UTF-8 NDJSON, one JSON
 * object per line, each line ending in `\n`:
 *
 * - a header `{"format":"folio-backup","version":1,"createdAt":…,"folio":…,"source":…}`;
 * - one line per record (the storage port's SnapshotRecord, `{"type":"account",…}`);
 * - a trailer `{"end":"folio-backup","records":N,"counts":{…},"sha256":…}`, where `sha256` is the
 *   SHA-256 of every byte before the trailer line, in hex.
 *
 * The whole file may be gzip-compressed (recognised by its first two bytes). A reader checks
 * everything (header, every record's shape, the trailer's counts and checksum) before anyone
 * writes a record, so a damaged or truncated file is refused whole. A record type this version
 * does not know is refused too: types can be added within version 1 (an older Folio then says
 * the file needs a newer one), while changing what an existing record means takes version 2.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { z } from 'zod';
import type { SnapshotRecord, SnapshotRecordType } from '../../store/port.js';

export const BACKUP_FORMAT = 'folio-backup';
export const BACKUP_VERSION = 1;

export interface BackupHeader {
  format: typeof BACKUP_FORMAT;
  version: number;
  createdAt: string;
  /** The Folio version that wrote the file. */
  folio: string;
  /** The store kind it was read from. */
  source: 'embedded' | 'mongodb';
}

export interface BackupTrailer {
  end: typeof BACKUP_FORMAT;
  records: number;
  counts: Partial<Record<SnapshotRecordType, number>>;
  sha256: string;
}

/** The file cannot be restored; the message says why, in one line. */
export class BackupFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFileError';
  }
}

// --- record shapes -------------------------------------------------------------------------------

const iso = z.string().min(1);
const scope = z.strictObject({ projectId: z.string().min(1), env: z.enum(['live', 'test']) });
const name = z.string().min(1);
/** A document: any JSON object with its id and the three metadata fields. */
const document = z.looseObject({
  _id: z.string().min(1),
  $createdAt: iso,
  $updatedAt: iso,
  $version: z.number().int().positive(),
});

/** One element of a document's history. */
const versionInfo = z.strictObject({
  version: z.number().int().positive(),
  operation: z.enum(['create', 'update', 'patch', 'restore']),
  timestamp: iso,
  apiKeyHint: z.string(),
});
/** A schema's text: kept byte for byte, but it must be JSON a schema can be (an object or a boolean). */
const schemaText = z.string().refine(
  (text) => {
    try {
      const value: unknown = JSON.parse(text);
      return (
        typeof value === 'boolean' || (typeof value === 'object' && value !== null && !Array.isArray(value))
      );
    } catch {
      return false;
    }
  },
  { message: 'not the JSON text of a schema (an object or a boolean)' },
);

const RECORD_SCHEMAS = {
  setting: z.strictObject({
    type: z.literal('setting'),
    name: z.literal('webhookSealingKey'),
    value: z.string(),
  }),
  account: z.strictObject({
    type: z.literal('account'),
    account: z.strictObject({
      id: name,
      email: z.string(),
      passwordHash: z.string(),
      plan: z.enum(['free', 'pro', 'team']),
      createdAt: iso,
    }),
  }),
  project: z.strictObject({
    type: z.literal('project'),
    project: z.strictObject({
      id: name,
      accountId: name,
      name: z.string(),
      createdAt: iso,
      allowedOrigins: z.array(z.string()).nullable(),
      autoIndexes: z.boolean().nullable().optional(),
    }),
  }),
  key: z.strictObject({
    type: z.literal('key'),
    key: z.strictObject({
      id: name,
      projectId: name,
      name: z.string(),
      env: z.enum(['live', 'test']),
      scope: z.enum(['read-write', 'read-only']),
      config: z.record(z.string(), z.json()),
      status: z.enum(['active', 'revoked']),
      keyHash: z.string().min(1),
      hint: z.string(),
      createdAt: iso,
      lastUsedAt: iso.nullable(),
      revokedAt: iso.nullable(),
      rotatedFrom: z.string().nullable(),
      // Absent in backups written before keys had rules: unrestricted.
      rules: z
        .array(
          z.strictObject({
            collections: z.array(z.string()),
            access: z.enum(['read', 'write']),
            filter: z.record(z.string(), z.json()).optional(),
          }),
        )
        .nullable()
        .optional(),
    }),
  }),
  webhook: z.strictObject({
    type: z.literal('webhook'),
    webhook: z.strictObject({
      id: name,
      scope,
      collection: name,
      url: z.string(),
      events: z.array(z.string()),
      description: z.string(),
      status: z.enum(['active', 'disabled']),
      sealedSecret: z.string(),
      consecutiveFailures: z.number().int().nonnegative(),
      createdAt: iso,
      updatedAt: iso,
    }),
  }),
  document: z.strictObject({ type: z.literal('document'), scope, collection: name, document }),
  version: z.strictObject({
    type: z.literal('version'),
    scope,
    collection: name,
    id: name,
    version: versionInfo,
    document,
  }),
  index: z.strictObject({
    type: z.literal('index'),
    scope,
    collection: name,
    index: z.strictObject({
      name,
      fields: z.array(z.strictObject({ path: name, order: z.union([z.literal(1), z.literal(-1)]) })).min(1),
      unique: z.boolean(),
      state: z.enum(['building', 'ready', 'failed']),
      // The MongoDB store's catalogue keeps no creation time: empty there.
      createdAt: z.string(),
      failure: z.strictObject({ message: z.string(), ids: z.array(z.string()) }).optional(),
    }),
  }),
  schema: z.strictObject({
    type: z.literal('schema'),
    scope,
    collection: name,
    schema: z.strictObject({
      schema: schemaText,
      mode: z.enum(['enforce', 'warn']),
      revision: name,
      updatedAt: iso,
    }),
  }),
  trashedDocument: z.strictObject({
    type: z.literal('trashedDocument'),
    scope,
    collection: name,
    entry: z
      .strictObject({ id: name, deletedAt: iso, apiKeyHint: z.string(), expiresAt: iso, document })
      .refine((entry) => entry.document._id === entry.id, {
        message: 'the entry id is not its document _id',
        path: ['id'],
      }),
  }),
  trashedVersion: z.strictObject({
    type: z.literal('trashedVersion'),
    scope,
    collection: name,
    id: name,
    version: versionInfo,
    document,
  }),
} satisfies Record<SnapshotRecordType, z.ZodType>;

/** Every record type of version 1, in no particular order. */
export const RECORD_TYPES = Object.keys(RECORD_SCHEMAS) as SnapshotRecordType[];

function isRecordType(type: unknown): type is SnapshotRecordType {
  return typeof type === 'string' && Object.hasOwn(RECORD_SCHEMAS, type);
}

/**
 * The record a line holds, or a BackupFileError naming the line and what is wrong. The record
 * returned is the line's own parse (not zod's output), so key order, which is part of a
 * document's bytes, is kept.
 */
export function parseRecordLine(line: string, lineNumber: number): SnapshotRecord {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    throw new BackupFileError(`line ${lineNumber} is not valid JSON`);
  }
  const type = (value as { type?: unknown } | null)?.type;
  if (!isRecordType(type)) {
    throw new BackupFileError(
      typeof type === 'string'
        ? `line ${lineNumber} holds a record of type "${type}", which this Folio does not know (written by a newer Folio?)`
        : `line ${lineNumber} is not a backup record (no "type")`,
    );
  }
  const checked = RECORD_SCHEMAS[type].safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
    throw new BackupFileError(
      `line ${lineNumber}: invalid ${type} record${where}: ${issue?.message ?? 'bad shape'}`,
    );
  }
  return value as SnapshotRecord;
}

// --- header and trailer --------------------------------------------------------------------------

export function headerLine(header: BackupHeader): string {
  return `${JSON.stringify(header)}\n`;
}

export function trailerLine(trailer: BackupTrailer): string {
  return `${JSON.stringify(trailer)}\n`;
}

function parseHeader(line: string | undefined): BackupHeader {
  let value: unknown;
  try {
    value = line === undefined ? undefined : JSON.parse(line);
  } catch {
    value = undefined;
  }
  const header = value as Partial<BackupHeader> | undefined;
  if (!header || header.format !== BACKUP_FORMAT) {
    throw new BackupFileError('not a Folio backup (the first line is not a folio-backup header)');
  }
  if (header.version !== BACKUP_VERSION) {
    throw new BackupFileError(
      `backup format version ${String(header.version)} is not supported (this Folio reads version ${BACKUP_VERSION})`,
    );
  }
  return header as BackupHeader;
}

function asTrailer(value: unknown): BackupTrailer | null {
  const t = value as Partial<BackupTrailer> | null;
  if (!t || typeof t !== 'object' || t.end !== BACKUP_FORMAT) return null;
  if (typeof t.records !== 'number' || typeof t.sha256 !== 'string' || typeof t.counts !== 'object')
    return null;
  return t as BackupTrailer;
}

// --- reading -------------------------------------------------------------------------------------

const GZIP_MAGIC = [0x1f, 0x8b];

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await handle.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === GZIP_MAGIC[0] && buffer[1] === GZIP_MAGIC[1];
  } finally {
    await handle.close();
  }
}

/**
 * The file's lines (without their `\n`), gunzipped when it is compressed; `terminated` is false
 * only for a last line no `\n` ended. Split by hand over the stream's chunks: stream iteration
 * rejects on a read or gunzip error, and nothing is kept per line once it is handed out.
 */
async function* lines(file: string): AsyncGenerator<{ text: string; terminated: boolean }> {
  const gzip = await isGzip(file);
  const raw = createReadStream(file);
  // pipeline() destroys the gunzip stream with the file's error too, so the loop below sees it.
  const source: Readable = gzip ? pipeline(raw, createGunzip(), () => {}) : raw;
  let pending: Buffer[] = [];
  try {
    for await (const chunk of source as AsyncIterable<Buffer>) {
      let from = 0;
      for (let at = chunk.indexOf(0x0a); at !== -1; at = chunk.indexOf(0x0a, from)) {
        pending.push(chunk.subarray(from, at));
        const text = Buffer.concat(pending).toString('utf8');
        pending = [];
        from = at + 1;
        yield { text, terminated: true };
      }
      if (from < chunk.length) pending.push(chunk.subarray(from));
    }
  } catch (error) {
    throw new BackupFileError(
      `the file cannot be read (${gzip ? 'damaged gzip data: ' : ''}${(error as Error).message})`,
    );
  } finally {
    raw.destroy();
  }
  if (pending.length > 0) yield { text: Buffer.concat(pending).toString('utf8'), terminated: false };
}

export interface VerifiedBackup {
  header: BackupHeader;
  trailer: BackupTrailer;
}

/**
 * Read the whole file and check it: the header, every record (known type, valid shape), the
 * trailer, its counts and the checksum. Throws BackupFileError saying what is wrong.
 */
export async function verifyBackup(file: string): Promise<VerifiedBackup> {
  const hash = createHash('sha256');
  let header: BackupHeader | undefined;
  let trailer: BackupTrailer | null = null;
  const counts: Partial<Record<SnapshotRecordType, number>> = {};
  let records = 0;
  let lineNumber = 0;
  let firstBadLine: BackupFileError | undefined;
  // Trashed documents seen so far: each trashed version must follow its own (a writer takes
  // the entry's expiry for its versions).
  const trashed = new Set<string>();
  for await (const { text, terminated } of lines(file)) {
    lineNumber++;
    if (trailer)
      throw new BackupFileError(`line ${lineNumber} follows the trailer (the file was appended to)`);
    if (lineNumber === 1) {
      header = parseHeader(text);
      hash.update(`${text}\n`);
      continue;
    }
    if (!terminated) break;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    const end = asTrailer(value);
    if (end) {
      trailer = end;
      continue;
    }
    hash.update(`${text}\n`);
    records++;
    try {
      const record = parseRecordLine(text, lineNumber);
      counts[record.type] = (counts[record.type] ?? 0) + 1;
      if (record.type === 'trashedDocument') trashed.add(trashKey(record, record.entry.id));
      else if (record.type === 'trashedVersion' && !trashed.has(trashKey(record, record.id))) {
        throw new BackupFileError(
          `line ${lineNumber}: a trashedVersion record of "${record.id}" comes before its trashedDocument record`,
        );
      }
    } catch (error) {
      // Reported after the checksum: a damaged line is corruption, not a bad record.
      firstBadLine ??= error as BackupFileError;
    }
  }
  if (!header) throw new BackupFileError('not a Folio backup (the file is empty)');
  if (!trailer) {
    throw new BackupFileError(
      `the file is truncated: it ends after ${lineNumber} line(s) without the trailer (an interrupted copy or backup?)`,
    );
  }
  const digest = hash.digest('hex');
  if (digest !== trailer.sha256) {
    throw new BackupFileError(
      `the file is corrupted: its SHA-256 does not match the one its trailer records${
        firstBadLine ? ` (first damaged ${firstBadLine.message})` : ''
      }`,
    );
  }
  if (firstBadLine) throw firstBadLine;
  if (trailer.records !== records || !sameCounts(trailer.counts, counts)) {
    throw new BackupFileError(
      `the file is inconsistent: its trailer counts ${trailer.records} records, the file holds ${records}`,
    );
  }
  return { header, trailer };
}

function trashKey(record: { scope: { projectId: string; env: string }; collection: string }, id: string) {
  return JSON.stringify([record.scope.projectId, record.scope.env, record.collection, id]);
}

function sameCounts(a: BackupTrailer['counts'], b: BackupTrailer['counts']): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]) as Set<SnapshotRecordType>;
  return [...keys].every((k) => (a[k] ?? 0) === (b[k] ?? 0));
}

/**
 * The records of a file `verifyBackup` accepted, in batches of at most `batchSize`, skipping the
 * first `skip` records (a resumed restore). Each line is parsed and checked again: a file
 * changed between the two passes is refused at the line that changed.
 */
export async function* backupBatches(
  file: string,
  batchSize: number,
  skip = 0,
): AsyncGenerator<SnapshotRecord[]> {
  let batch: SnapshotRecord[] = [];
  let lineNumber = 0;
  let index = 0;
  for await (const { text } of lines(file)) {
    lineNumber++;
    if (lineNumber === 1) continue;
    if (asTrailer(safeParse(text))) break;
    if (index++ < skip) continue;
    batch.push(parseRecordLine(text, lineNumber));
    if (batch.length >= batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
