/**
 * SQL conditions over `agenda_jobs` for Agenda's database-agnostic selectors: which jobs to
 * cancel, disable or enable (RemoveJobsOptions), which to list (JobsQueryOptions), and which
 * existing job a `unique()` save matches. Semantics follow Agenda's MongoDB backend:
 * - a `data` object matches partially, leaf by leaf (`{a: {b: 1}}` means `data.a.b == 1`);
 *   any other `data` value must equal the whole of `data`;
 * - equality with `null` also matches a missing value;
 * - values that are not of the expected type (say, a number as `name`) are ignored, as input
 *   may come from a dashboard's query string.
 * All values are bound parameters; only column names from `JOB_FIELDS` reach the SQL text.
 */
import type { JobsQueryOptions, JobsSort, RemoveJobsOptions } from 'agenda';
import { encodeField, isStoredField, JOB_FIELDS, type SqlValue } from './row.js';
import { DEDUPE_EXPRESSION } from './schema.js';

export interface SqlFilter {
  /** `WHERE ...`, or '' when nothing is filtered. */
  where: string;
  params: SqlValue[];
}

class Conditions {
  readonly #parts: string[] = [];
  readonly params: SqlValue[] = [];

  add(sql: string, ...params: SqlValue[]): void {
    this.#parts.push(`(${sql})`);
    this.params.push(...params);
  }

  get empty(): boolean {
    return this.#parts.length === 0;
  }

  filter(): SqlFilter {
    return { where: this.empty ? '' : `WHERE ${this.#parts.join(' AND ')}`, params: this.params };
  }
}

/** Jobs selected for cancel/disable/enable; null when the options select nothing at all. */
export function selectionFilter(options: RemoveJobsOptions): SqlFilter | null {
  const conditions = new Conditions();
  addIds(conditions, options.id, options.ids);
  const names = strings(options.names);
  const notNames = strings(options.notNames);
  if (typeof options.name === 'string' && options.name) conditions.add('name = ?', options.name);
  else if (names.length > 0)
    conditions.add('name IN (SELECT value FROM json_each(?))', JSON.stringify(names));
  else if (notNames.length > 0) {
    conditions.add('name NOT IN (SELECT value FROM json_each(?))', JSON.stringify(notNames));
  }
  if (options.data !== undefined) addData(conditions, options.data);
  // An empty selector must not mean "every job": cancelling everything is purgeAllJobs().
  return conditions.empty ? null : conditions.filter();
}

/** Jobs listed by queryJobs, before the computed-state filter. */
export function listingFilter(options: JobsQueryOptions): SqlFilter {
  const conditions = new Conditions();
  const names = strings(options.names);
  if (typeof options.name === 'string' && options.name) conditions.add('name = ?', options.name);
  else if (names.length > 0)
    conditions.add('name IN (SELECT value FROM json_each(?))', JSON.stringify(names));
  addIds(conditions, options.id, options.ids);
  if (typeof options.search === 'string' && options.search) {
    // LIKE is case-insensitive (ASCII); the search text is literal, so its wildcards are escaped.
    conditions.add("name LIKE ? ESCAPE '\\'", `%${options.search.replace(/[\\%_]/g, '\\$&')}%`);
  }
  if (options.data !== undefined) addData(conditions, options.data);
  if (options.includeDisabled === false) conditions.add('disabled IS NOT 1');
  return conditions.filter();
}

/**
 * The job a `unique()` save would update: same name, and every key of `unique` equal. Keys are
 * `data`, `data.<path>` or a top-level job field (`type`, `priority`, ...). MongoDB query
 * operators (`$in`, ...) have no SQL translation here and are refused rather than misread.
 */
export function uniqueFilter(name: string, unique: Record<string, unknown>): SqlFilter {
  const conditions = new Conditions();
  conditions.add('name = ?', name);
  for (const [key, value] of Object.entries(unique)) {
    refuseOperators(key, value);
    if (key === 'data.dedupeKey' && value !== null && value !== undefined) {
      // Spelled as the index expression (schema.ts), so the lookup is an index seek.
      conditions.add(`${DEDUPE_EXPRESSION} = ?`, jsonText(value));
    } else if (key === 'data' || key.startsWith('data.')) {
      addJsonEquals(conditions, pathSegments(key.slice('data'.length)), value);
    } else if (key === '_id') {
      conditions.add('id IS ?', value === undefined || value === null ? null : String(value));
    } else if (isStoredField(key)) {
      conditions.add(`${JOB_FIELDS[key].column} IS ?`, encodeField(key, value));
    } else {
      throw new Error(`agenda unique(): unsupported key "${key}"`);
    }
  }
  return conditions.filter();
}

const SORT_COLUMNS = {
  nextRunAt: 'next_run_at',
  lastRunAt: 'last_run_at',
  lastFinishedAt: 'last_finished_at',
  priority: 'priority',
  name: 'name',
  data: 'data',
} as const satisfies Record<keyof JobsSort, string>;

/**
 * ORDER BY for a listing. Keys apply in a fixed order (as Agenda's MongoDB backend does), the
 * default is latest nextRunAt then latest lastRunAt, and `id` (creation order) breaks ties so
 * that pages are stable. `data` sorts by its JSON text.
 */
export function orderBy(sort: JobsSort | undefined): string {
  const keys: string[] = [];
  for (const [field, column] of Object.entries(SORT_COLUMNS)) {
    const direction = sort?.[field as keyof JobsSort];
    if (direction !== undefined) keys.push(`${column} ${direction === 'asc' ? 'ASC' : 'DESC'}`);
  }
  if (keys.length === 0) keys.push('next_run_at DESC', 'last_run_at DESC');
  keys.push('id ASC');
  return keys.join(', ');
}

function addIds(conditions: Conditions, id: unknown, ids: unknown): void {
  const idList = Array.isArray(ids)
    ? ids.filter((value) => value !== undefined && value !== null).map(String)
    : [];
  if (id !== undefined && id !== null && id !== '') conditions.add('id = ?', String(id));
  else if (idList.length > 0)
    conditions.add('id IN (SELECT value FROM json_each(?))', JSON.stringify(idList));
}

function addData(conditions: Conditions, data: unknown): void {
  if (!isPlainObject(data)) {
    addJsonEquals(conditions, [], data);
    return;
  }
  for (const [segments, value] of leaves(data, [])) addJsonEquals(conditions, segments, value);
}

/** Leaf paths of a plain object: `{a: {b: 1}, c: [2]}` gives `[a,b] = 1` and `[c] = [2]`. */
function* leaves(object: Record<string, unknown>, prefix: string[]): Generator<[string[], unknown]> {
  for (const [key, value] of Object.entries(object)) {
    if (isPlainObject(value)) yield* leaves(value, [...prefix, key]);
    else yield [[...prefix, key], value];
  }
}

/**
 * `data` (or the value at a path inside it) equals `value`. Both sides are JSON text written by
 * JSON.stringify, so equal values have equal text (objects compare key order too, as in MongoDB).
 */
function addJsonEquals(conditions: Conditions, segments: string[], value: unknown): void {
  const selected = segments.length === 0 ? 'data' : 'data -> ?';
  const pathParams: SqlValue[] = segments.length === 0 ? [] : [jsonPath(segments)];
  if (value === null || value === undefined) {
    conditions.add(`coalesce(${selected}, 'null') = 'null'`, ...pathParams);
    return;
  }
  conditions.add(`${selected} = ?`, ...pathParams, jsonText(value));
}

function jsonText(value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new Error('agenda job filter: data value is not JSON');
  return text;
}

/**
 * Agenda's computed state (`computeJobState`) as a SQL expression over one row at `nowMs` (an
 * integer the server computed, written as a literal): counts and state listings then run in the
 * database, never on every job loaded into memory.
 */
export function stateSql(nowMs: number): string {
  const now = Math.floor(nowMs);
  if (!Number.isSafeInteger(now)) throw new Error('agenda job state: bad time');
  return `CASE
    WHEN locked_at IS NOT NULL THEN 'running'
    WHEN failed_at IS NOT NULL AND (last_finished_at IS NULL OR failed_at >= last_finished_at) THEN 'failed'
    WHEN repeat_interval IS NOT NULL AND repeat_interval NOT IN ('""', '0') THEN 'repeating'
    WHEN next_run_at IS NOT NULL AND next_run_at > ${now} THEN 'scheduled'
    WHEN next_run_at IS NOT NULL THEN 'queued'
    ELSE 'completed' END`;
}

/** `''` (all of data) or `.a.b` (a path inside it) as path segments. */
function pathSegments(dotted: string): string[] {
  return dotted === '' ? [] : dotted.slice(1).split('.');
}

/** A SQLite JSON path with every label quoted, so keys like `a-b` or `0` are plain keys. */
function jsonPath(segments: string[]): string {
  for (const segment of segments) {
    if (segment === '' || segment.includes('"')) {
      throw new Error(`agenda job filter: unsupported data key "${segment}"`);
    }
  }
  return `$${segments.map((segment) => `."${segment}"`).join('')}`;
}

function refuseOperators(key: string, value: unknown): void {
  const operatorIn = (object: unknown): boolean =>
    isPlainObject(object) && Object.entries(object).some(([k, v]) => k.startsWith('$') || operatorIn(v));
  if (key.startsWith('$') || operatorIn(value)) {
    throw new Error(`agenda unique(): query operators are not supported by the embedded store (${key})`);
  }
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
