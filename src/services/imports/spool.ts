/**
 * A temporary file holding an import's valid records between its two passes (read and check
 * everything, then write), so memory holds one batch whatever the body's size. One NDJSON line
 * per record; the file is removed by `dispose()`.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { JsonObject } from '../../store/port.js';

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

  async append(index: number, line: number | undefined, id: string, fields: JsonObject): Promise<void> {
    if (!this.#out) {
      this.#dir = await mkdtemp(join(tmpdir(), 'folio-import-'));
      this.#file = join(this.#dir, 'records.ndjson');
      this.#out = createWriteStream(this.#file);
      // Kept for the next append (a full disk, say); after dispose() it no longer matters.
      this.#out.on('error', (error) => {
        this.#error ??= error;
      });
    }
    if (this.#error) throw this.#error;
    const entry: Line = [index, line ?? null, id, fields];
    this.count += 1;
    if (!this.#out.write(`${JSON.stringify(entry)}\n`)) await once(this.#out, 'drain');
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
