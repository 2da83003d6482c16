/**
 * Agenda's JobRepository on the embedded store's SQLite database (`agenda_jobs`).
 *
 * better-sqlite3 is synchronous, so nothing else in this process runs between the statements of
 * one method. Other processes sharing the file are kept out by SQLite's own locking: a claim or
 * lock is one `UPDATE ... RETURNING` statement (its condition and its write are one atomic step),
 * and a save that reads before it writes runs in a `BEGIN IMMEDIATE` transaction, which takes the
 * write lock before the read. Waiting for another process's lock is the connection's
 * `busy_timeout`, which the store sets.
 *
 * Durability (the store syncs every commit, `synchronous=FULL`): a new job must survive a power
 * loss, so inserts are durable, but saves arriving in the same turn share one transaction and
 * one sync (groupCommit.ts): a burst of retries handed over costs a sync per group, not per job.
 * A caller that makes a durable commit of its own on this connection after each insert (the
 * webhook dispatcher saves its feed position only after the jobs it handed over) sets
 * `deferInserts`: inserts then commit without their own sync, and that commit syncs them (the
 * WAL is synced whole), so a crash or power loss loses a job only together with the position
 * that would have skipped its event.
 * Everything else (claims, locks, unlocks, run state, re-saves of an existing job) commits
 * without waiting for the disk (`synchronous=NORMAL` for that statement): a process crash loses
 * none of it (it is in the WAL), and the next durable commit syncs it; what a power loss could
 * undo is a lock or a run's outcome, which makes the job run again, as Agenda's at-least-once
 * runs allow (a webhook delivery's own record and attempt lock decide whether it sends).
 */
import {
  computeJobState,
  type JobId,
  type JobParameters,
  type JobRepository,
  type JobRepositoryOptions,
  type JobsOverview,
  type JobsQueryOptions,
  type JobsResult,
  type JobWithState,
  type RemoveJobsOptions,
  toJobId,
} from 'agenda';
import type Database from 'better-sqlite3';
import { type JobStateCount, jobsOverview } from '../../agendaOverview.js';
import { ChunkedSweep, type RangeCursor, rangePageSql } from '../database/chunkedSweep.js';
import { GroupCommit } from '../documents/groupCommit.js';
import { BOUND_COUNT } from '../query/sqlLimit.js';
import { listingFilter, orderBy, type SqlFilter, selectionFilter, stateSql, uniqueFilter } from './filter.js';
import { newJobId } from './id.js';
import { JOB_COLUMNS, type JobRow, jobToRow, rowToJob, type SqlValue, toEpochMs } from './row.js';
import { debounceExisting, debounceNew, mergeSave, singleNextRunAt } from './save.js';
import { ensureJobSchema, JOBS_TABLE } from './schema.js';

const T = JOBS_TABLE;

interface ClaimParams {
  name: string;
  nextScanAt: number;
  lockDeadline: number;
  lockedAt: number;
  by: string | null;
}

interface LockParams {
  id: string;
  name: string;
  nextRunAt: number | null;
  lockedAt: number;
  by: string | null;
}

interface StateParams {
  id: string;
  name: string;
  locked_at: number | null;
  next_run_at: number | null;
  last_run_at: number | null;
  progress: number | null;
  fail_reason: string | null;
  fail_count: number | null;
  failed_at: number | null;
  last_finished_at: number | null;
  by: string | null;
}

/** The claim of the next job to run (getNextJobToRun): one statement, see the note below. */
export const CLAIM_SQL = `UPDATE ${T} SET locked_at = @lockedAt, last_modified_by = @by
       WHERE id = (
         SELECT id FROM (
           SELECT * FROM (
             SELECT id, next_run_at, priority FROM ${T}
             WHERE name = @name AND locked_at IS NULL AND next_run_at <= @nextScanAt AND disabled IS NOT 1
             ORDER BY next_run_at ASC, priority DESC, id ASC LIMIT 1)
           UNION ALL
           SELECT * FROM (
             SELECT id, next_run_at, priority FROM ${T}
             WHERE name = @name AND locked_at <= @lockDeadline AND disabled IS NOT 1
             ORDER BY next_run_at ASC, priority DESC, id ASC LIMIT 1))
         ORDER BY next_run_at ASC, priority DESC, id ASC
         LIMIT 1)
       RETURNING *`;

function prepareStatements(db: Database.Database) {
  const assignments = JOB_COLUMNS.map((column) => `${column} = @${column}`).join(', ');
  return {
    byId: db.prepare<[string], JobRow>(`SELECT * FROM ${T} WHERE id = ?`),
    byIdAndName: db.prepare<[string, string], JobRow>(`SELECT * FROM ${T} WHERE id = ? AND name = ?`),
    singleByName: db.prepare<[string], JobRow>(`SELECT * FROM ${T} WHERE name = ? AND type = 'single'`),
    insert: db.prepare<JobRow, JobRow>(
      `INSERT INTO ${T} (id, ${JOB_COLUMNS.join(', ')})
       VALUES (@id, ${JOB_COLUMNS.map((column) => `@${column}`).join(', ')}) RETURNING *`,
    ),
    update: db.prepare<JobRow, JobRow>(`UPDATE ${T} SET ${assignments} WHERE id = @id RETURNING *`),
    // Due and unlocked, or locked by a worker whose lock has outlived the lock lifetime (it died
    // or hung); earliest first, then highest priority, as Agenda's own backends order it. Two
    // branches rather than one OR so that each is an index range: finished jobs (not locked, no
    // next run) pile up under the same name and must not be scanned on every poll. Each branch
    // takes its own first job in index order (`claim_order`), so a claim costs the same with
    // 20,000 due retries as with one (sorting every due job on every claim made a backlog O(n²)).
    claim: db.prepare<ClaimParams, JobRow>(CLAIM_SQL),
    lock: db.prepare<LockParams, JobRow>(
      `UPDATE ${T} SET locked_at = @lockedAt, last_modified_by = @by
       WHERE id = @id AND name = @name AND locked_at IS NULL AND next_run_at IS @nextRunAt
         AND disabled IS NOT 1
       RETURNING *`,
    ),
    // A job whose nextRunAt is null is running its last (or only) run; its lock stays.
    unlock: db.prepare<[string], void>(
      `UPDATE ${T} SET locked_at = NULL WHERE id = ? AND next_run_at IS NOT NULL`,
    ),
    unlockMany: db.prepare<[string], void>(
      `UPDATE ${T} SET locked_at = NULL WHERE id IN (SELECT value FROM json_each(?))`,
    ),
    saveState: db.prepare<StateParams, void>(
      `UPDATE ${T} SET locked_at = @locked_at, next_run_at = @next_run_at, last_run_at = @last_run_at,
         progress = @progress, fail_reason = @fail_reason, fail_count = @fail_count,
         failed_at = @failed_at, last_finished_at = @last_finished_at, last_modified_by = @by
       WHERE id = @id AND name = @name`,
    ),
    names: db.prepare<[], { name: string }>(`SELECT DISTINCT name FROM ${T} ORDER BY name`),
    queueSize: db.prepare<[number], { n: number }>(`SELECT count(*) AS n FROM ${T} WHERE next_run_at < ?`),
    purge: db.prepare<[], void>(`DELETE FROM ${T}`),
    // The sweep of finished jobs, in chunks (chunkedSweep.ts): a page of the `finished` index
    // of one name, then those of it that did not fail last.
    finishedPage: db.prepare<
      { name: string; before: number; afterAt: number; afterRowid: number; rows: number },
      RangeCursor
    >(
      rangePageSql(
        T,
        `${T}_finished`,
        'last_finished_at',
        'name = @name AND next_run_at IS NULL AND locked_at IS NULL AND last_finished_at < @before',
      ),
    ),
    removeFinished: db.prepare<{ ids: string }, void>(
      `DELETE FROM ${T} WHERE rowid IN (SELECT value FROM json_each(@ids))
         AND (failed_at IS NULL OR last_finished_at > failed_at)`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

export class EmbeddedJobRepository implements JobRepository {
  #statements: Statements | null = null;
  #saveTransaction: Database.Transaction<
    (job: JobParameters, by: string | null, nowMs: number) => JobRow | null
  > | null = null;
  #inserts: GroupCommit<{ job: JobParameters; by: string | null; nowMs: number }, JobRow | null> | null =
    null;
  /** The connection's own `synchronous` level, restored after each relaxed statement. */
  #synchronous = 2;
  /** Inserts commit without their own sync (see the durability note above). */
  deferInserts = false;
  readonly #sweeps: ChunkedSweep;

  constructor(
    private readonly db: Database.Database,
    options: { sweepChunkRows?: number | undefined } = {},
  ) {
    this.#sweeps = new ChunkedSweep(options.sweepChunkRows);
  }

  /** Groups of inserts committed so far, and of those the ones synced on their own. */
  get insertGroups(): { groups: number; durable: number } {
    return { groups: this.#inserts?.groups ?? 0, durable: this.#inserts?.durableGroups ?? 0 };
  }

  /** Create the table and indexes if missing. Idempotent; every Agenda on this backend calls it. */
  async connect(): Promise<void> {
    this.#ready();
  }

  async getJobById(id: string): Promise<JobParameters | null> {
    const row = this.#ready().byId.get(String(id));
    return row ? rowToJob(row) : null;
  }

  async queryJobs(options: JobsQueryOptions = {}): Promise<JobsResult> {
    const now = new Date();
    const filter = listingFilter(options);
    const skip = nonNegativeInteger(options.skip);
    const limit = nonNegativeInteger(options.limit);
    const withState = (row: JobRow): JobWithState => {
      const job = rowToJob(row);
      return { ...job, _id: toJobId(row.id), state: computeJobState(job, now) };
    };

    // The computed state is a SQL expression too: the database filters, paginates and counts.
    const where = options.state ? narrowToState(filter, options.state, now.getTime()) : filter;
    const rows = this.#all(
      `SELECT * FROM ${T} ${where.where} ORDER BY ${orderBy(options.sort)} LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}`,
      [...where.params, limit > 0 ? limit : -1, skip],
    );
    return { jobs: rows.map(withState), total: this.#count(where) };
  }

  /** Counts per name and state, computed by the database (one grouped count, no job loaded). */
  async getJobsOverview(): Promise<JobsOverview[]> {
    const rows = this.db
      .prepare<[], JobStateCount>(
        `SELECT name, ${stateSql(Date.now())} AS state, count(*) AS n,
           sum(CASE WHEN disabled = 1 THEN 1 ELSE 0 END) AS paused
         FROM ${T} GROUP BY name, state ORDER BY name`,
      )
      .all();
    return jobsOverview(rows);
  }

  /**
   * Remove jobs of `name` that completed before `beforeMs` (no next run, not locked, not failed
   * last): ranges of the `finished` index, in chunks that yield to other work between them
   * (chunkedSweep.ts), each its own short transaction. How many were removed.
   */
  async removeCompletedBefore(name: string, beforeMs: number): Promise<number> {
    const statements = this.#ready();
    const before = Math.floor(beforeMs);
    return this.#sweeps.runRange(
      this.db,
      (after, rows) =>
        statements.finishedPage.all({ name, before, afterAt: after.at, afterRowid: after.rowid, rows }),
      () => (ids) => statements.removeFinished.run({ ids }).changes,
    );
  }

  /** No sweep chunk runs after this (the store is closing); waits for the one under way. */
  stopSweeps(): Promise<void> {
    return this.#sweeps.stop();
  }

  async getDistinctJobNames(): Promise<string[]> {
    return this.#ready()
      .names.all()
      .map((row) => row.name);
  }

  async getQueueSize(): Promise<number> {
    return this.#ready().queueSize.get(Date.now())?.n ?? 0;
  }

  async removeJobs(options: RemoveJobsOptions): Promise<number> {
    const filter = selectionFilter(options);
    return filter ? this.#run(`DELETE FROM ${T} ${filter.where}`, filter.params) : 0;
  }

  async disableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.#setDisabled(options, true);
  }

  async enableJobs(options: RemoveJobsOptions): Promise<number> {
    return this.#setDisabled(options, false);
  }

  async purgeAllJobs(): Promise<number> {
    return this.#ready().purge.run().changes;
  }

  async saveJob<DATA = unknown>(
    job: JobParameters<DATA>,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters<DATA>> {
    this.#ready();
    const by = options?.lastModifiedBy ?? null;
    // IMMEDIATE (also the group's transaction) takes the write lock before the lookup, so no
    // other process can insert the same single/unique job between this save's read and insert.
    const row = job._id
      ? this.#relaxed(() => this.#saveTransaction?.immediate(job, by, Date.now()) ?? null)
      : await this.#groupedInserts().commit({ job, by, nowMs: Date.now() }, !this.deferInserts);
    // A job saved by id that was removed meanwhile comes back unchanged, as with Agenda's
    // other backends. `data` was written as JSON and is read back as what was written.
    return row ? (rowToJob(row) as JobParameters<DATA>) : job;
  }

  async saveJobState(job: JobParameters, options: JobRepositoryOptions | undefined): Promise<void> {
    if (!job._id) throw new Error('agenda jobs: cannot save the state of a job without an id');
    const statements = this.#ready();
    const result = this.#relaxed(() =>
      statements.saveState.run({
        id: String(job._id),
        name: job.name,
        locked_at: optionalMs(job.lockedAt, 'lockedAt'),
        next_run_at: optionalMs(job.nextRunAt, 'nextRunAt'),
        last_run_at: optionalMs(job.lastRunAt, 'lastRunAt'),
        progress: job.progress ?? null,
        fail_reason: job.failReason ?? null,
        fail_count: job.failCount ?? null,
        failed_at: optionalMs(job.failedAt, 'failedAt'),
        last_finished_at: optionalMs(job.lastFinishedAt, 'lastFinishedAt'),
        by: options?.lastModifiedBy ?? null,
      }),
    );
    if (result.changes !== 1) {
      throw new Error(`agenda job ${job._id} (${job.name}) cannot be updated: it no longer exists`);
    }
  }

  async lockJob(
    job: JobParameters,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters | undefined> {
    if (!job._id) return undefined;
    const statements = this.#ready();
    const row = this.#relaxed(() =>
      statements.lock.get({
        id: String(job._id),
        name: job.name,
        nextRunAt: optionalMs(job.nextRunAt, 'nextRunAt'),
        lockedAt: Date.now(),
        by: options?.lastModifiedBy ?? null,
      }),
    );
    return row ? rowToJob(row) : undefined;
  }

  async unlockJob(job: JobParameters): Promise<void> {
    if (!job._id) return;
    const statements = this.#ready();
    this.#relaxed(() => statements.unlock.run(String(job._id)));
  }

  /** Release the given jobs' locks whatever their state (Agenda calls it from `stop()`). */
  async unlockJobs(jobIds: (JobId | string)[]): Promise<void> {
    if (jobIds.length === 0) return;
    const statements = this.#ready();
    this.#relaxed(() => statements.unlockMany.run(JSON.stringify(jobIds.map(String))));
  }

  async getNextJobToRun(
    jobName: string,
    nextScanAt: Date,
    lockDeadline: Date,
    now: Date | undefined,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters | undefined> {
    const statements = this.#ready();
    const row = this.#relaxed(() =>
      statements.claim.get({
        name: jobName,
        nextScanAt: toEpochMs(nextScanAt, 'nextScanAt'),
        lockDeadline: toEpochMs(lockDeadline, 'lockDeadline'),
        lockedAt: now ? toEpochMs(now, 'now') : Date.now(),
        by: options?.lastModifiedBy ?? null,
      }),
    );
    return row ? rowToJob(row) : undefined;
  }

  #setDisabled(options: RemoveJobsOptions, disabled: boolean): number {
    const filter = selectionFilter(options);
    if (!filter) return 0;
    // Count only jobs whose flag changes, like MongoDB's modifiedCount.
    const unchanged = disabled ? 'disabled IS NOT 1' : 'disabled IS NOT 0';
    return this.#run(`UPDATE ${T} SET disabled = ? ${filter.where} AND ${unchanged}`, [
      disabled ? 1 : 0,
      ...filter.params,
    ]);
  }

  /** Insert, or update the job the save designates (see `save.ts`); null: its id is gone. */
  #saveInTransaction(job: JobParameters, by: string | null, nowMs: number): JobRow | null {
    const statements = this.#ready();
    const { _id, unique, uniqueOpts, ...incoming } = job;
    const update = (stored: JobRow, next: JobParameters): JobRow | null =>
      statements.update.get(jobToRow(stored.id, next, by)) ?? null;
    const insert = (next: JobParameters): JobRow | null =>
      statements.insert.get(jobToRow(newJobId(nowMs), next, by)) ?? null;

    if (_id) {
      const stored = statements.byIdAndName.get(String(_id), incoming.name);
      return stored ? update(stored, mergeSave(rowToJob(stored), incoming)) : null;
    }

    if (incoming.type === 'single') {
      const stored = statements.singleByName.get(incoming.name);
      if (!stored) return insert(incoming);
      const storedJob = rowToJob(stored);
      return update(stored, {
        ...mergeSave(storedJob, incoming),
        nextRunAt: singleNextRunAt(storedJob, incoming, nowMs),
      });
    }

    if (unique) {
      const debounce = uniqueOpts?.debounce;
      const filter = uniqueFilter(incoming.name, unique);
      const stored = this.db
        .prepare<SqlValue[], JobRow>(`SELECT * FROM ${T} ${filter.where} ORDER BY id LIMIT 1`)
        .get(...filter.params);
      if (!stored)
        return insert(debounce ? { ...incoming, ...debounceNew(debounce, incoming, nowMs) } : incoming);
      if (uniqueOpts?.insertOnly && !debounce) return stored;
      const storedJob = rowToJob(stored);
      const next = mergeSave(storedJob, incoming);
      return update(stored, debounce ? { ...next, ...debounceExisting(debounce, storedJob, nowMs) } : next);
    }

    return insert(incoming);
  }

  #ready(): Statements {
    if (this.#statements) return this.#statements;
    ensureJobSchema(this.db);
    this.#statements = prepareStatements(this.db);
    this.#saveTransaction = this.db.transaction((job: JobParameters, by: string | null, nowMs: number) =>
      this.#saveInTransaction(job, by, nowMs),
    );
    this.#synchronous = Number(this.db.pragma('synchronous', { simple: true }));
    this.#inserts = new GroupCommit(
      this.db,
      ({ job, by, nowMs }: { job: JobParameters; by: string | null; nowMs: number }) =>
        this.#saveInTransaction(job, by, nowMs),
      { afterCommit: () => {}, beforeDeferred: () => {} },
    );
    return this.#statements;
  }

  #groupedInserts(): GroupCommit<{ job: JobParameters; by: string | null; nowMs: number }, JobRow | null> {
    if (!this.#inserts) throw new Error('agenda jobs: repository not ready');
    return this.#inserts;
  }

  /** Run one write without waiting for the disk (see the durability note above). */
  #relaxed<T>(write: () => T): T {
    if (this.#synchronous < 2 || this.db.inTransaction) return write();
    this.db.pragma('synchronous = NORMAL');
    try {
      return write();
    } finally {
      // A number read from SQLite itself, not user input.
      this.db.pragma(`synchronous = ${this.#synchronous}`);
    }
  }

  #all(sql: string, params: SqlValue[]): JobRow[] {
    return this.db.prepare<SqlValue[], JobRow>(sql).all(...params);
  }

  #count(filter: SqlFilter): number {
    return (
      this.db
        .prepare<SqlValue[], { n: number }>(`SELECT count(*) AS n FROM ${T} ${filter.where}`)
        .get(...filter.params)?.n ?? 0
    );
  }

  #run(sql: string, params: SqlValue[]): number {
    return this.db.prepare<SqlValue[], void>(sql).run(...params).changes;
  }
}

/** `filter` narrowed to jobs in Agenda's computed `state` (or paused) at `nowMs`. */
function narrowToState(filter: SqlFilter, state: string, nowMs: number): SqlFilter {
  const condition = state === 'paused' ? 'disabled = 1' : `${stateSql(nowMs)} = ?`;
  const params = state === 'paused' ? filter.params : [...filter.params, state];
  return {
    where: filter.where ? `${filter.where} AND (${condition})` : `WHERE ${condition}`,
    params,
  };
}

function optionalMs(value: Date | string | number | null | undefined, field: string): number | null {
  return value === undefined || value === null ? null : toEpochMs(value, field);
}

function nonNegativeInteger(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
