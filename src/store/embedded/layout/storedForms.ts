/**
 * Rows of `documents` written before bodies were kept in the API form (`api_form` 0, metadata
 * under `_folio`: apiText.ts) are rewritten into it after start-up, in chunks (chunkedSweep.ts),
 * so an upgrade neither waits at start for every document to be rewritten nor pays the old
 * form's reading cost for long. Reads answer the same text from either form meanwhile, and a
 * write stores the new form; a conversion changes no document's content, version or times, so
 * it touches no cache and emits no event. The rows are found through a partial index of the old
 * ones (schema migration 8), which stays empty once they are all converted.
 */
import type Database from 'better-sqlite3';
import { ChunkedSweep, chunkWasFull } from '../database/chunkedSweep.js';
import { CONVERTED_BODY } from '../documents/apiText.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';

/** Rows a chunk rewrites: each rewrite also updates the row's declared-index entries. */
export const CONVERSION_CHUNK_ROWS = 500;

export class StoredFormConversion {
  readonly #sweep: ChunkedSweep;
  readonly #chunk: Database.Statement<[number, number], number>;

  constructor(db: Database.Database, chunkRows: number = CONVERSION_CHUNK_ROWS) {
    this.#sweep = new ChunkedSweep(chunkRows);
    this.#chunk = db
      .prepare<[number, number], number>(
        `UPDATE documents SET body = ${CONVERTED_BODY}, api_form = 1 WHERE rowid IN (` +
          'SELECT rowid FROM documents INDEXED BY documents_stored_form ' +
          `WHERE api_form = 0 AND rowid > ? ORDER BY rowid LIMIT ${BOUND_COUNT}) RETURNING rowid`,
      )
      .pluck();
  }

  /** Convert every row still in the old form; how many were. */
  run(): Promise<number> {
    return this.#sweep.run(
      () => ({ after: 0 }),
      (state, chunkRows) => {
        const rowids = this.#chunk.all(state.after, chunkRows);
        for (const rowid of rowids) if (rowid > state.after) state.after = rowid;
        return { removed: rowids.length, more: chunkWasFull(rowids.length, chunkRows) };
      },
    );
  }

  /** No chunk runs after this (the store is closing); waits for the one under way. */
  stop(): Promise<void> {
    return this.#sweep.stop();
  }
}
