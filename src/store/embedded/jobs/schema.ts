/**
 * The `agenda_jobs` table. It belongs to the Agenda backend, not to the store's numbered
 * migrations (`schema.ts`): the backend creates it, idempotently, when Agenda connects, so a
 * store that never runs jobs never has it. Columns match `JOB_FIELDS` in `row.ts`.
 */
import type Database from 'better-sqlite3';

export const JOBS_TABLE = 'agenda_jobs';

/** `data.dedupeKey` as JSON text: the indexed form of the one unique key the server uses. */
export const DEDUPE_EXPRESSION = `(data -> '$."dedupeKey"')`;

/** `data.bodyKey` as JSON text: which kept webhook body a delivery job sends (deliveryBodies.ts). */
export const BODY_KEY_EXPRESSION = `(data -> '$."bodyKey"')`;

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
  -- The unlocked-and-due branch read in claim order, so its first job is found without a sort.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_claim_order
    ON ${JOBS_TABLE} (name, locked_at, next_run_at, priority DESC, id);

  -- At most one 'single' job (agenda.every) per name, whatever process saves it.
  CREATE UNIQUE INDEX IF NOT EXISTS ${JOBS_TABLE}_single ON ${JOBS_TABLE} (name) WHERE type = 'single';

  -- Queue size and the default listing order.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_next_run ON ${JOBS_TABLE} (next_run_at);

  -- A unique() save on data.dedupeKey (every webhook delivery job) finds its job through this
  -- index; without it each save scanned the whole table's JSON under the write lock (O(n) per
  -- save, O(n^2) per burst). The expression must be spelled exactly as filter.ts writes it.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_dedupe ON ${JOBS_TABLE} (name, ${DEDUPE_EXPRESSION})
    WHERE ${DEDUPE_EXPRESSION} IS NOT NULL;

  -- A kept webhook body is removed only once no unfinished job names it (deliveryBodies.ts):
  -- one look-up per body through this index.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_body ON ${JOBS_TABLE} (name, ${BODY_KEY_EXPRESSION})
    WHERE ${BODY_KEY_EXPRESSION} IS NOT NULL;

  -- The sweep of finished jobs: one ranged DELETE per name, never a load of all jobs.
  CREATE INDEX IF NOT EXISTS ${JOBS_TABLE}_finished ON ${JOBS_TABLE} (name, last_finished_at)
    WHERE next_run_at IS NULL AND locked_at IS NULL;
`;

export function ensureJobSchema(db: Database.Database): void {
  db.exec(DDL);
}
