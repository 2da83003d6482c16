/**
 * Rows of `documents` from before a document's current version lived in its row alone (schema
 * 9, currentVersion.ts) have no operation, and `versions` holds their current version as well.
 * After start-up they are moved to the new layout in chunks (chunkedSweep.ts): the history row
 * of the current version goes, and the row takes its operation and key hint. The history reads
 * the same before and after, so a conversion touches no cache and emits no event; what it gives
 * back is the second copy of every document, which SQLite reuses for later writes.
 *
 * A row is converted only when its history row says what the row would: the same version, and
 * the time of that version equal to the row's `updated_at`. Every row Folio wrote has one; a row
 * without (a file edited by hand, a version removed by another tool) is left as it is, still read
 * correctly. A restore writes rows without an operation too (snapshot.ts), so a restored
 * directory is converted the same way at its next start. The rows are found through a partial
 * index of those without an operation (schema migration 9), empty once all are converted but
 * the ones left as they are.
 */
import type Database from 'better-sqlite3';
import type { WriteOperation } from '../../port.js';
import { ChunkedSweep, chunkWasFull } from '../database/chunkedSweep.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';

/** Rows a chunk moves: each is two writes (the row, its history row's delete). */
export const HISTORY_CHUNK_ROWS = 500;

interface OldRow {
  rowid: number;
  scope: string;
  collection: string;
  id: string;
  version: number;
  updated_at: string;
}

type MovedKey = [scope: string, collection: string, id: string, version: number, timestamp: string];

export class HistoryLayoutConversion {
  readonly #sweep: ChunkedSweep;
  readonly #chunk: (after: number, limit: number) => { rows: number; last: number; converted: number };

  constructor(db: Database.Database, chunkRows: number = HISTORY_CHUNK_ROWS) {
    this.#sweep = new ChunkedSweep(chunkRows);
    const oldRows = db.prepare<[number, number], OldRow>(
      'SELECT rowid, scope, collection, id, version, updated_at FROM documents ' +
        'INDEXED BY documents_history_layout WHERE operation IS NULL AND rowid > ? ' +
        `ORDER BY rowid LIMIT ${BOUND_COUNT}`,
    );
    // The current version's history row, only where its time is the row's.
    const dropCopy = db.prepare<MovedKey, { operation: WriteOperation; api_key_hint: string }>(
      'DELETE FROM versions WHERE scope = ? AND collection = ? AND doc_id = ? AND version = ? ' +
        'AND timestamp = ? RETURNING operation, api_key_hint',
    );
    const takeOver = db.prepare<[WriteOperation, string, number]>(
      'UPDATE documents SET operation = ?, api_key_hint = ? WHERE rowid = ?',
    );
    // One transaction a chunk: a row and its history row change together. IMMEDIATE: the write
    // lock is taken first, so an operator command writing from another process makes it wait,
    // never fail half-way.
    const chunk = db.transaction((after: number, limit: number) => {
      const rows = oldRows.all(after, limit);
      let converted = 0;
      for (const row of rows) {
        const copy = dropCopy.get(row.scope, row.collection, row.id, row.version, row.updated_at);
        if (!copy) continue;
        takeOver.run(copy.operation, copy.api_key_hint, row.rowid);
        converted++;
      }
      return { rows: rows.length, last: rows.at(-1)?.rowid ?? after, converted };
    });
    this.#chunk = (after, limit) => chunk.immediate(after, limit);
  }

  /** Move every row still in the old layout; how many were moved. */
  run(): Promise<number> {
    let converted = 0;
    // The sweep counts the rows it visited (a row left as it is is visited once a run).
    return this.#sweep
      .run(
        () => ({ after: 0 }),
        (state, chunkRows) => {
          const chunk = this.#chunk(state.after, chunkRows);
          state.after = chunk.last;
          converted += chunk.converted;
          return { removed: chunk.rows, more: chunkWasFull(chunk.rows, chunkRows) };
        },
      )
      .then(() => converted);
  }

  /** No chunk runs after this (the store is closing); waits for the one under way. */
  stop(): Promise<void> {
    return this.#sweep.stop();
  }
}
