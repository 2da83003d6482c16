/**
 * A temporary file holding an import's valid records between its two passes (read and check
 * everything, then write), so memory holds one batch whatever the body's size. One NDJSON line
 * per record, in a directory of its own under the OS temporary directory named
 * `folio-import-<pid>-<instance>-<random>`; the importer removes it (`dispose()`) however the
 * request ends, and a start-up removes those a dead process left (`removeLeftoverSpools`).
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { lstat, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { JsonObject } from '../../store/port.js';

/**
 * This process's mark in its spools' names. With the pid, it tells a spool of a live process
 * (this one included: several servers may share it) from one left by a process that died, even
 * when the new process got the dead one's pid (a restarted container is often pid 1 again).
 */
export const SPOOL_INSTANCE = randomBytes(4).toString('hex');
const SPOOL_NAME = /^folio-import-(\d+)-([0-9a-f]{8})-[A-Za-z0-9]{6}$/;
/** Spools named by Folio before the pid was in the name: removed only once surely abandoned. */
const LEGACY_SPOOL_NAME = /^folio-import-[A-Za-z0-9]{6}$/;
export const LEGACY_SPOOL_MAX_AGE_MS = 24 * 60 * 60 * 1000;

export interface SpoolOwner {
  pid: number;
  instance: string;
  /** Whether a process with this pid runs now (any process: a pid may have been reused). */
  alive(pid: number): boolean;
}

/**
 * Whether a temporary directory entry is a spool no running import can be using: Folio's name,
 * and a process that is gone (or this pid under another instance mark), or a legacy name older
 * than LEGACY_SPOOL_MAX_AGE_MS. Anything else, Folio's or not, is left alone.
 */
export function isLeftoverSpool(name: string, ageMs: number, owner: SpoolOwner): boolean {
  const match = SPOOL_NAME.exec(name);
  if (match) {
    const pid = Number(match[1]);
    if (pid === owner.pid) return match[2] !== owner.instance;
    return !owner.alive(pid);
  }
  return LEGACY_SPOOL_NAME.test(name) && ageMs > LEGACY_SPOOL_MAX_AGE_MS;
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the spools crashed processes left in `dir` (a crash skips `dispose()`); returns their
 * names. Only real directories owned by this user are removed; a symbolic link is never followed.
 */
export async function removeLeftoverSpools(
  dir: string = tmpdir(),
  owner: SpoolOwner = { pid: process.pid, instance: SPOOL_INSTANCE, alive: processAlive },
  nowMs: number = Date.now(),
): Promise<string[]> {
  const removed: string[] = [];
  const uid = process.getuid?.();
  for (const name of await readdir(dir)) {
    if (!name.startsWith('folio-import-')) continue;
    const path = join(dir, name);
    const stat = await lstat(path).catch(() => null);
    if (!stat?.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue;
    if (!isLeftoverSpool(name, nowMs - stat.mtimeMs, owner)) continue;
    await rm(path, { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

export interface SpooledRecord {
  index: number;
  line: number | undefined;
  id: string;
  fields: JsonObject;
  /** UTF-8 bytes of the record as spooled: what batches are sized by. */
  bytes: number;
}

type Line = [index: number, line: number | null, id: string, fields: JsonObject];

export class Spool {
  #out: WriteStream | null = null;
  #dir: string | null = null;
  #file = '';
  #error: Error | null = null;
  count = 0;

  /** `fieldsJson`: the record's fields as JSON text (the importer measured it already). */
  async append(index: number, line: number | undefined, id: string, fieldsJson: string): Promise<void> {
    if (!this.#out) {
      this.#dir = await mkdtemp(join(tmpdir(), `folio-import-${process.pid}-${SPOOL_INSTANCE}-`));
      this.#file = join(this.#dir, 'records.ndjson');
      this.#out = createWriteStream(this.#file);
      // Kept for the next append (a full disk, say); after dispose() it no longer matters.
      this.#out.on('error', (error) => {
        this.#error ??= error;
      });
    }
    if (this.#error) throw this.#error;
    this.count += 1;
    // The text of JSON.stringify([index, line, id, fields]) (a Line), the fields not serialised again.
    const entry = `[${index},${line ?? null},${JSON.stringify(id)},${fieldsJson}]\n`;
    if (!this.#out.write(entry)) await once(this.#out, 'drain');
  }

  /** Every record appended, in order. Call once, after the last `append`. */
  async *records(): AsyncGenerator<SpooledRecord> {
    const out = this.#out;
    if (!out) return;
    if (this.#error) throw this.#error;
    out.end();
    await once(out, 'finish');
    const lines = createInterface({
      input: createReadStream(this.#file),
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    try {
      for await (const text of lines) {
        const [index, line, id, fields] = JSON.parse(text) as Line;
        yield { index, line: line ?? undefined, id, fields, bytes: Buffer.byteLength(text) };
      }
    } finally {
      lines.close();
    }
  }

  async dispose(): Promise<void> {
    this.#out?.destroy();
    if (this.#dir) await rm(this.#dir, { recursive: true, force: true });
  }
}
