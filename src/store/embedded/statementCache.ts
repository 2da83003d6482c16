/**
 * Prepared statements for generated SQL, keyed by SQL text. Preparing costs a parse per call;
 * compiled queries repeat (same filter shape, different values), so reuse pays. Bounded, least
 * recently used out first, because filter shapes come from clients.
 */
import type Database from 'better-sqlite3';
import { OldestFirstMap } from '../../oldestFirstMap.js';
import type { SqlParam } from './compileQuery.js';

export class StatementCache {
  readonly #entries: OldestFirstMap<Database.Statement<SqlParam[], unknown>>;

  constructor(
    private readonly db: Database.Database,
    capacity: number,
  ) {
    this.#entries = new OldestFirstMap(capacity);
  }

  /** The statement for `sql`; `Row` is the caller's promise about its result columns. */
  get<Row>(sql: string): Database.Statement<SqlParam[], Row> {
    const stmt = this.#entries.get(sql) ?? this.db.prepare<SqlParam[], unknown>(sql);
    // Set again on every use, so the least recently used is the oldest. An evicted statement
    // needs no finalizing: better-sqlite3 frees it when it is collected.
    this.#entries.set(sql, stmt);
    return stmt as Database.Statement<SqlParam[], Row>;
  }
}
