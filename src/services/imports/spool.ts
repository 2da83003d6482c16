/**
 * An import's valid records between its two passes (read and check everything, then write).
 * The first `memoryBytes` of them (by their spooled text) stay in memory as they were checked;
 * past that, all of them go to a temporary file, so memory holds at most that budget plus one
 * batch whatever the body's size. Writing a small import's records to a file and parsing them
 * back cost about 3 µs of CPU per document, and garbage, of an import's 50.
 *
 * The file: one NDJSON line per record, in a directory of its own under the OS temporary
 * directory named `folio-import-<pid>-<instance>-<random>`; the importer removes it (`dispose()`)
 * however the request ends, and a start-up removes those a dead process left
 * (`removeLeftoverSpools`).
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
  /** Whether the id came from the record (else Folio generated it: no document can have it yet). */
  given: boolean;
  fields: JsonObject;
  /** UTF-8 bytes of the record as spooled: what batches are sized by. */
  bytes: number;
}

type Line = [index: number, line: number | null, id: string, fields: JsonObject, given: 0 | 1];

export class Spool {
  #out: WriteStream | null = null;
  #dir: string | null = null;
  #file = '';
  #error: Error | null = null;
  /** The records while they fit in `memoryBytes`; null once they went to the file. */
  #held: SpooledRecord[] | null = [];
  #heldBytes = 0;
  count = 0;

  /** `memoryBytes`: spooled text kept in memory before the records go to a file (0: none). */
  constructor(private readonly memoryBytes: number = 0) {}

  /** Whether the records went to a file (tests; the metrics of a spill). */
  get onDisk(): boolean {
    return this.#held === null;
  }

  /** `fieldsJson`: the record's fields as JSON text (the importer measured it already). */
  async append(
    index: number,
    line: number | undefined,
    id: string,
    given: boolean,
    fields: JsonObject,
    fieldsJson: string,
  ): Promise<void> {
    if (this.#error) throw this.#error;
    this.count += 1;
    // The text of JSON.stringify([index, line, id, fields, given]) (a Line), the fields not
    // serialised again; in memory only its size is needed.
    const head = `[${index},${line ?? null},${JSON.stringify(id)},`;
    const tail = given ? ',1]' : ',0]';
    const bytes = Buffer.byteLength(head) + Buffer.byteLength(fieldsJson) + tail.length;
    if (this.#held !== null) {
      if (this.#heldBytes + bytes <= this.memoryBytes) {
        this.#heldBytes += bytes;
        this.#held.push({ index, line, id, given, fields, bytes });
        return;
      }
      await this.#spill();
    }
    await this.#write(`${head}${fieldsJson}${tail}\n`);
  }

  /** Over the memory budget: the records held so far go to the file, and every later one. */
  async #spill(): Promise<void> {
    const held = this.#held ?? [];
    this.#held = null;
    this.#heldBytes = 0;
    this.#dir = await mkdtemp(join(tmpdir(), `folio-import-${process.pid}-${SPOOL_INSTANCE}-`));
    this.#file = join(this.#dir, 'records.ndjson');
    this.#out = createWriteStream(this.#file);
    // Kept for the next append (a full disk, say); after dispose() it no longer matters.
    this.#out.on('error', (error) => {
      this.#error ??= error;
    });
    for (const r of held) {
      const entry: Line = [r.index, r.line ?? null, r.id, r.fields, r.given ? 1 : 0];
      await this.#write(`${JSON.stringify(entry)}\n`);
    }
  }

  async #write(entry: string): Promise<void> {
    const out = this.#out!;
    if (!out.write(entry)) await once(out, 'drain');
    if (this.#error) throw this.#error;
  }

  /** Every record appended, in order. Call once, after the last `append`. */
  async *records(): AsyncGenerator<SpooledRecord> {
    if (this.#error) throw this.#error;
    if (this.#held !== null) {
      // Handed out once: memory holds them no longer than the write pass needs each.
      const held = this.#held;
      this.#held = [];
      for (let i = 0; i < held.length; i++) {
        yield held[i]!;
        held[i] = undefined as unknown as SpooledRecord;
      }
      return;
    }
    const out = this.#out!;
    out.end();
    await once(out, 'finish');
    const lines = createInterface({
      input: createReadStream(this.#file),
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    try {
      for await (const text of lines) {
        const [index, line, id, fields, given] = JSON.parse(text) as Line;
        yield {
          index,
          line: line ?? undefined,
          id,
          given: given === 1,
          fields,
          bytes: Buffer.byteLength(text),
        };
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
