/** What SQLite does with a query the embedded store would run: its plan, and its rows. */
import type Database from 'better-sqlite3';

/** EXPLAIN QUERY PLAN's lines for `sql`, joined, and the rows `sql` returns. */
export function planAndRows<R>(
  db: Database.Database,
  sql: string,
  params: unknown[],
): { plan: string; rows: R[] } {
  const plan = db
    .prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
    .all(...params)
    .map((r) => r.detail)
    .join('\n');
  return { plan, rows: db.prepare<unknown[], R>(sql).all(...params) };
}
