/**
 * Prepared statements for generated SQL, keyed by SQL text. Preparing costs a parse per call;
 * compiled queries repeat (same filter shape, different values), so reuse pays. Bounded, least
 * recently used out first, because filter shapes come from clients.
 */
import type Database from 'better-sqlite3';
import type { SqlParam } from './compileQuery.js';

export class StatementCache {
  readonly #entries = new Map<string, Database.Statement<SqlParam[], unknown>>();

  constructor(
    private readonly db: Database.Database,
    private readonly capacity: number,
  ) {}

  /** The statement for `sql`; `Row` is the caller's promise about its result columns. */
  get<Row>(sql: string): Database.Statement<SqlParam[], Row> {
    let stmt = this.#entries.get(sql);
    if (stmt) {
      // Re-insert to mark it most recently used (Map keeps insertion order).
      this.#entries.delete(sql);
    } else {
      stmt = this.db.prepare<SqlParam[], unknown>(sql);
      if (this.#entries.size >= this.capacity) {
        const oldest = this.#entries.keys().next().value;
        if (oldest !== undefined) this.#entries.delete(oldest);
      }
    }
    this.#entries.set(sql, stmt);
    return stmt as Database.Statement<SqlParam[], Row>;
  }
}
