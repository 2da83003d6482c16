/**
 * What `saveJob` writes when the job already exists (by id, as the one `single` job of its name,
 * or as the match of a `unique()` key). Pure: the repository reads the stored job and writes the
 * result in one transaction.
 */
import type { DebounceOptions, JobParameters } from 'agenda';

type Schedule = Pick<JobParameters, 'nextRunAt' | 'debounceStartedAt'>;

/**
 * The stored job updated by a save. A save carries the job's definition (name, data, schedule,
 * repeat settings), which replaces the stored one. The run state (lock, last run, failures,
 * progress) belongs to the job processor, which writes it with `saveJobState`; `Job.save()`
 * leaves it out, so here the stored run state is kept unless the caller supplies a value. That
 * way re-saving a job (say, re-scheduling a failed one) neither drops a running job's lock nor
 * erases its failure record. `disabled` is likewise kept when the save does not set it, so a job
 * paused with `agenda.disable()` stays paused when start-up code declares it again.
 */
export function mergeSave(stored: JobParameters, incoming: JobParameters): JobParameters {
  return {
    ...incoming,
    _id: stored._id,
    lockedAt: incoming.lockedAt ?? stored.lockedAt,
    lastRunAt: incoming.lastRunAt ?? stored.lastRunAt,
    lastFinishedAt: incoming.lastFinishedAt ?? stored.lastFinishedAt,
    failedAt: incoming.failedAt ?? stored.failedAt,
    failCount: incoming.failCount ?? stored.failCount,
    failReason: incoming.failReason ?? stored.failReason,
    progress: incoming.progress ?? stored.progress,
    disabled: incoming.disabled ?? stored.disabled,
  };
}

/**
 * `agenda.every()` saves its `single` job with nextRunAt "now" whenever it is declared, typically
 * at every start-up. A stored schedule wins over such a due time, so restarting does not run the
 * job early; a future nextRunAt (say, a new cron expression) replaces it.
 */
export function singleNextRunAt(stored: JobParameters, incoming: JobParameters, nowMs: number): Date | null {
  const due = incoming.nextRunAt !== null && new Date(incoming.nextRunAt).getTime() <= nowMs;
  return due && stored.nextRunAt !== null ? stored.nextRunAt : incoming.nextRunAt;
}

/**
 * Debounce for a save that matches an existing job. Trailing (default): the run moves to `delay`
 * after this save, unless `maxWait` has passed since the window opened, then it runs now and the
 * window closes. Leading: the run keeps its time; only the job's data and settings change.
 */
export function debounceExisting(options: DebounceOptions, stored: JobParameters, nowMs: number): Schedule {
  const openedAt = stored.debounceStartedAt ? new Date(stored.debounceStartedAt) : new Date(nowMs);
  if (options.strategy === 'leading') return { nextRunAt: stored.nextRunAt, debounceStartedAt: openedAt };
  if (options.maxWait && nowMs - openedAt.getTime() >= options.maxWait) {
    return { nextRunAt: new Date(nowMs), debounceStartedAt: undefined };
  }
  return { nextRunAt: new Date(nowMs + options.delay), debounceStartedAt: openedAt };
}

/** Debounce for the first save of a key: the window opens; trailing runs `delay` from now. */
export function debounceNew(options: DebounceOptions, incoming: JobParameters, nowMs: number): Schedule {
  const nextRunAt = options.strategy === 'leading' ? incoming.nextRunAt : new Date(nowMs + options.delay);
  return { nextRunAt, debounceStartedAt: new Date(nowMs) };
}
