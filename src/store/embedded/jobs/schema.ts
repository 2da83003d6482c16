/**
 * The `agenda_jobs` table. It belongs to the Agenda backend, not to the store's numbered
 * migrations (`schema.ts`): the backend creates it, idempotently, when Agenda connects, so a
 * store that never runs jobs never has it. Columns match `JOB_FIELDS` in `row.ts`.
 */
import type Database from 'better-sqlite3';

export const JOBS_TABLE = 'agenda_jobs';

const DDL = `
  CREATE TABLE IF NOT EXISTS ${JOBS_TABLE} (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    type TEXT NOT NULL,
    priority REAL NOT NULL,
    next_run_at INTEGER,
    locked_at INTEGER,
    last_run_at INTEGER,
    last_finished_at INTEGER,
    failed_at INTEGER,
    fail_count INTEGER,
    fail_reason TEXT,
    progress REAL,
    data TEXT,
    repeat_interval TEXT,
    repeat_timezone TEXT,
    repeat_at TEXT,
    disabled INTEGER,
    fork INTEGER,
    start_date INTEGER,
    end_date INTEGER,
    skip_days TEXT,
    debounce_started_at INTEGER,
    last_modified_by TEXT
  ) STRICT;

  -- The claim (getNextJobToRun) reads two ranges of one name: unlocked and due
  -- (locked_at IS NULL, next_run_at <= scan horizon) and lock expired (locked_at <= deadline).
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_claim ON ${JOBS_TABLE} (name, locked_at, next_run_at);

  -- At most one 'single' job (agenda.every) per name, whatever process saves it.
  CREATE UNIQUE INDEX IF NOT EXISTS ${JOBS_TABLE}_single ON ${JOBS_TABLE} (name) WHERE type = 'single';

  -- Queue size and the default listing order.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_next_run ON ${JOBS_TABLE} (next_run_at);
`;

export function ensureJobSchema(db: Database.Database): void {
  db.exec(DDL);
}
