/**
 * Prepared statements for generated SQL, keyed by SQL text. Preparing costs a parse per call;
 * compiled queries repeat (same filter shape, different values), so reuse pays. Bounded, least
 * recently used out first, because filter shapes come from clients. An evicted statement needs
 * no finalizing: better-sqlite3 frees it when it is collected.
 */
import type Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import type { SqlParam } from './sqlFragments.js';

export class StatementCache {
  readonly #entries: LRUCache<string, Database.Statement<SqlParam[], unknown>>;

  constructor(
    private readonly db: Database.Database,
    max: number,
  ) {
    this.#entries = new LRUCache({ max });
  }

  /** The statement for `sql`; `Row` is the caller's promise about its result columns. */
  get<Row>(sql: string): Database.Statement<SqlParam[], Row> {
    let stmt = this.#entries.get(sql);
    if (stmt === undefined) {
      stmt = this.db.prepare<SqlParam[], unknown>(sql);
      this.#entries.set(sql, stmt);
    }
    return stmt as Database.Statement<SqlParam[], Row>;
  }
}
