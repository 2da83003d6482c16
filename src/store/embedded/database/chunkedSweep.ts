/**
 * Periodic deletes in bounded chunks. One `DELETE ... WHERE <expired>` costs time in proportion
 * to what expired: with 250,000 aged-out change rows it held the event loop, and SQLite's one
 * write lock, for about 200 ms, and every request and write waited behind it. A sweep here runs
 * `step` (one short statement or transaction over at most `chunkRows` rows), then yields to the
 * event loop (setImmediate: pending I/O, timers and writes run) before the next chunk, until a
 * chunk comes back short or the sweep is stopped. Sweeps of one kind never overlap: a second
 * `run` waits for the one under way.
 */
import type Database from 'better-sqlite3';
import { boundCount } from '../query/sqlLimit.js';

/** Rows per chunk: a few milliseconds of deleting, so a sweep never holds the writer long. */
export const SWEEP_CHUNK_ROWS = 2000;

/**
 * Whether a range may hold more rows after a chunk that met `rows` of at most `chunkRows`: only
 * a full chunk can have left rows behind.
 */
export function chunkWasFull(rows: number, chunkRows: number): boolean {
  return rows >= chunkRows;
}

/** What one chunk did: rows removed (counted) and whether the sweep has more chunks to run. */
export interface ChunkResult {
  removed: number;
  more: boolean;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

export class ChunkedSweep {
  readonly chunkRows: number;
  #running: Promise<number> | null = null;
  #stopped = false;

  constructor(chunkRows: number = SWEEP_CHUNK_ROWS) {
    if (!Number.isSafeInteger(chunkRows) || chunkRows < 1) throw new RangeError('chunkRows must be >= 1');
    this.chunkRows = chunkRows;
  }

  /** Whether a sweep is under way. */
  get running(): boolean {
    return this.#running !== null;
  }

  /**
   * Sweep with `step` (called with the chunk size) until done; the total removed. `start` runs
   * once, when this sweep's turn comes (e.g. to fix the sweep's boundary), and its value is
   * handed to every step. After `stop`, resolves 0 without touching the database.
   */
  async run<S>(start: () => S, step: (state: S, chunkRows: number) => ChunkResult): Promise<number> {
    while (this.#running) await this.#running.catch(() => 0);
    if (this.#stopped) return 0;
    const sweep = this.#sweep(start, step);
    this.#running = sweep;
    try {
      return await sweep;
    } finally {
      if (this.#running === sweep) this.#running = null;
    }
  }

  /**
   * Sweep a range of an index (rangePageSql), a page a chunk, each chunk its own immediate
   * transaction: `readPage` reads the entries after a cursor, the function `remover` makes (once,
   * when this sweep's turn comes) deletes the listed rowids (a JSON array) and says how many went.
   * The cursor walks past the rows it keeps rather than looking at them again in every chunk.
   */
  runRange(
    db: Database.Database,
    readPage: (after: RangeCursor, rows: number) => RangeCursor[],
    remover: () => (ids: string) => number,
  ): Promise<number> {
    return this.run(
      () => ({ after: RANGE_START, remove: remover() }),
      (state, rows) =>
        db
          .transaction(() => {
            const page = readPage(state.after, rows);
            const removed =
              page.length === 0 ? 0 : state.remove(JSON.stringify(page.map((entry) => entry.rowid)));
            const next = nextCursor(page, rows);
            if (next) state.after = next;
            return { removed, more: next !== null };
          })
          .immediate(),
    );
  }

  /** No chunk starts after this; resolves once the chunk under way (if any) has finished. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running?.catch(() => 0);
  }

  async #sweep<S>(start: () => S, step: (state: S, chunkRows: number) => ChunkResult): Promise<number> {
    const state = start();
    let total = 0;
    for (;;) {
      const { removed, more } = step(state, this.chunkRows);
      total += removed;
      if (!more || this.#stopped) return total;
      await nextTurn();
      if (this.#stopped) return total;
    }
  }
}

/** A place in an index over an integer column: the column's value, then the rowid. */
export interface RangeCursor {
  at: number;
  rowid: number;
}

/** Before every row of a range (column values are epoch milliseconds, rowids positive). */
export const RANGE_START: RangeCursor = { at: Number.MIN_SAFE_INTEGER, rowid: 0 };

/** Where the next page of a range starts after `page` (of at most `chunkRows`), or null: done. */
export function nextCursor(page: readonly RangeCursor[], chunkRows: number): RangeCursor | null {
  const last = page.at(-1);
  return last && chunkWasFull(page.length, chunkRows) ? { at: last.at, rowid: last.rowid } : null;
}

/**
 * A page of `index` (over `column`, then the rowid) after the cursor `(@afterAt, @afterRowid)`,
 * among rows matching `where`: `at, rowid` of at most `@rows` rows. For ranges a sweep walks past
 * rows it keeps (a body still named by a job, a failed job): without a cursor each chunk would
 * look at them all again. Two ranges of the index, so a page starts where the last one ended
 * even among many rows of one value: the rest of the last value (`column = ? AND rowid > ?`),
 * then the values after it.
 */
export function rangePageSql(table: string, index: string, column: string, where: string): string {
  const from = `SELECT ${column} AS at, rowid FROM ${table} INDEXED BY ${index} WHERE ${where}`;
  return `SELECT at, rowid FROM (
      ${from} AND ${column} = @afterAt AND rowid > @afterRowid ORDER BY rowid LIMIT ${boundCount('rows')})
    UNION ALL
    SELECT at, rowid FROM (
      ${from} AND ${column} > @afterAt ORDER BY ${column}, rowid LIMIT ${boundCount('rows')})
    ORDER BY at, rowid LIMIT ${boundCount('rows')}`;
}
