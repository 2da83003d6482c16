/**
 * How an Agenda job (`JobParameters`) is stored in `agenda_jobs`, and back. Dates are epoch
 * milliseconds (integers compare and index cheaply); `data`, `repeatInterval` and `skipDays` are
 * JSON text, so a number stays a number and a string a string. An absent optional field is NULL
 * and reads back as absent; `nextRunAt` is the exception: it is always present, `null` when unset,
 * because Agenda's `Job` treats a missing `nextRunAt` as "now".
 */
import { type JobParameters, toJobId } from 'agenda';

export type SqlValue = string | number | null;

type Kind = 'text' | 'number' | 'flag' | 'date' | 'json';

/** The JobParameters fields the table stores; `unique`/`uniqueOpts` only steer one save. */
export type StoredField = Exclude<keyof JobParameters, '_id' | 'unique' | 'uniqueOpts'>;

/**
 * Column and encoding of every stored field. `satisfies` makes the compiler flag a field that
 * a newer Agenda adds to JobParameters until it has a column here (and in `schema.ts`).
 */
export const JOB_FIELDS = {
  name: { column: 'name', kind: 'text' },
  type: { column: 'type', kind: 'text' },
  priority: { column: 'priority', kind: 'number' },
  nextRunAt: { column: 'next_run_at', kind: 'date' },
  lockedAt: { column: 'locked_at', kind: 'date' },
  lastRunAt: { column: 'last_run_at', kind: 'date' },
  lastFinishedAt: { column: 'last_finished_at', kind: 'date' },
  failedAt: { column: 'failed_at', kind: 'date' },
  failCount: { column: 'fail_count', kind: 'number' },
  failReason: { column: 'fail_reason', kind: 'text' },
  progress: { column: 'progress', kind: 'number' },
  data: { column: 'data', kind: 'json' },
  repeatInterval: { column: 'repeat_interval', kind: 'json' },
  repeatTimezone: { column: 'repeat_timezone', kind: 'text' },
  repeatAt: { column: 'repeat_at', kind: 'text' },
  disabled: { column: 'disabled', kind: 'flag' },
  fork: { column: 'fork', kind: 'flag' },
  startDate: { column: 'start_date', kind: 'date' },
  endDate: { column: 'end_date', kind: 'date' },
  skipDays: { column: 'skip_days', kind: 'json' },
  debounceStartedAt: { column: 'debounce_started_at', kind: 'date' },
  lastModifiedBy: { column: 'last_modified_by', kind: 'text' },
} as const satisfies Record<StoredField, { column: string; kind: Kind }>;

export type JobColumn = (typeof JOB_FIELDS)[StoredField]['column'];

/** One row of `agenda_jobs`. */
export type JobRow = { id: string } & Record<JobColumn, SqlValue>;

export const JOB_COLUMNS: readonly JobColumn[] = Object.values(JOB_FIELDS).map((field) => field.column);

export function isStoredField(key: string): key is StoredField {
  return Object.hasOwn(JOB_FIELDS, key);
}

/** The SQL value of one field, as every write and every equality filter stores it. */
export function encodeField(field: StoredField, value: unknown): SqlValue {
  if (value === undefined || value === null) return null;
  switch (JOB_FIELDS[field].kind) {
    case 'text':
      return typeof value === 'string' ? value : String(value);
    case 'number': {
      const number = typeof value === 'number' ? value : Number(value);
      return Number.isFinite(number) ? number : null;
    }
    case 'flag':
      return value ? 1 : 0;
    case 'date':
      return toEpochMs(value, field);
    case 'json':
      return JSON.stringify(value) ?? null;
  }
}

export function toEpochMs(value: unknown, field: string): number {
  const ms =
    value instanceof Date
      ? value.getTime()
      : typeof value === 'string' || typeof value === 'number'
        ? new Date(value).getTime()
        : Number.NaN;
  // Refuse rather than store NULL: a NULL nextRunAt would silently mean "never run".
  if (!Number.isFinite(ms)) throw new TypeError(`agenda job ${field}: not a valid date`);
  return ms;
}

/** The full row for a job; `lastModifiedBy` is the saving Agenda's name, as Agenda's backends do. */
export function jobToRow(id: string, job: JobParameters, lastModifiedBy: string | null): JobRow {
  const row: Record<string, SqlValue> = { id };
  for (const field of Object.keys(JOB_FIELDS) as StoredField[]) {
    row[JOB_FIELDS[field].column] = encodeField(field, job[field]);
  }
  row.last_modified_by = lastModifiedBy;
  // Every column was just assigned from JOB_FIELDS, which is what JobRow is derived from.
  return row as JobRow;
}

export function rowToJob(row: JobRow): JobParameters {
  const job: JobParameters = {
    _id: toJobId(row.id),
    name: text(row.name) ?? '',
    priority: number(row.priority) ?? 0,
    nextRunAt: date(row.next_run_at) ?? null,
    type: row.type === 'single' ? 'single' : 'normal',
    data: json(row.data),
  };
  // Absent fields stay absent (not `undefined`-valued keys), as a freshly created job has them.
  const fields = job as unknown as Record<StoredField, unknown>;
  for (const field of OPTIONAL_FIELDS) {
    const value = decodeField(field, row[JOB_FIELDS[field].column]);
    if (value !== undefined) fields[field] = value;
  }
  return job;
}

/** The fields rowToJob sets only when present, in JOB_FIELDS order. */
const OPTIONAL_FIELDS = (Object.keys(JOB_FIELDS) as StoredField[]).filter(
  (field) => !['name', 'type', 'priority', 'nextRunAt', 'data'].includes(field),
);

/** A field's value read from its column; undefined: absent. */
function decodeField(field: StoredField, value: SqlValue): unknown {
  if (field === 'repeatInterval') return repeatInterval(json(value));
  if (field === 'skipDays') return skipDays(json(value));
  switch (JOB_FIELDS[field].kind) {
    case 'text':
      return text(value);
    case 'number':
      return number(value);
    case 'flag':
      return flag(value);
    case 'date':
      return date(value);
    case 'json':
      return json(value);
  }
}

const text = (value: SqlValue): string | undefined => (typeof value === 'string' ? value : undefined);
const number = (value: SqlValue): number | undefined => (typeof value === 'number' ? value : undefined);
const date = (value: SqlValue): Date | undefined => (typeof value === 'number' ? new Date(value) : undefined);
const flag = (value: SqlValue): boolean | undefined => (value === null ? undefined : value === 1);
const json = (value: SqlValue): unknown => (typeof value === 'string' ? JSON.parse(value) : undefined);

const repeatInterval = (value: unknown): string | number | undefined =>
  typeof value === 'string' || typeof value === 'number' ? value : undefined;

const skipDays = (value: unknown): number[] | undefined =>
  Array.isArray(value) ? value.filter((day): day is number => typeof day === 'number') : undefined;
