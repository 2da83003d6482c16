/**
 * Server-side upkeep of Agenda's job collection: counts per computed state and the removal of
 * finished jobs, as MongoDB expressions and filters. @agendajs/mongo-backend's own
 * `getJobsOverview` and state queries load every job of a name (bodies included) into memory;
 * these never do. Pure values, so they are tested without a server (through mingo).
 */
import type { Document, Filter, IndexDescription } from 'mongodb';

/** Agenda's `computeJobState` as an aggregation expression over one job at `now`. */
export function jobStateExpression(now: Date): Document {
  // Set: present and not null (`$ifNull` turns a missing field into null first).
  const set = (field: string) => ({ $ne: [{ $ifNull: [field, null] }, null] });
  // Nested $cond, first match wins, in computeJobState's order.
  const rules: Array<[Document, string]> = [
    [set('$lockedAt'), 'running'],
    [
      {
        $and: [
          set('$failedAt'),
          { $or: [{ $not: [set('$lastFinishedAt')] }, { $gte: ['$failedAt', '$lastFinishedAt'] }] },
        ],
      },
      'failed',
    ],
    [
      { $and: [set('$repeatInterval'), { $ne: ['$repeatInterval', ''] }, { $ne: ['$repeatInterval', 0] }] },
      'repeating',
    ],
    [{ $and: [set('$nextRunAt'), { $gt: ['$nextRunAt', now] }] }, 'scheduled'],
    [set('$nextRunAt'), 'queued'],
  ];
  return rules.reduceRight<Document | string>(
    (otherwise, [condition, state]) => ({ $cond: [condition, state, otherwise] }),
    'completed',
  ) as Document;
}

/**
 * How long one overview serves: the `$group` below reads every job, so metrics scrapes (every
 * instance, every Prometheus) share one read per this long instead of one each.
 */
export const OVERVIEW_MAX_AGE_MS = 30_000;
/** `maxTimeMS` of the overview: a huge backlog fails the scrape's gauge, never holds the server. */
export const OVERVIEW_TIME_LIMIT_MS = 5_000;

/** Whether an overview read (or still being read) at `readAtMs` serves a request at `nowMs`. */
export function overviewServes(readAtMs: number, nowMs: number): boolean {
  return nowMs >= readAtMs && nowMs - readAtMs < OVERVIEW_MAX_AGE_MS;
}

/** Counts per name and state, and how many of them are paused: `[{name, state, n, paused}]`. */
export function overviewPipeline(now: Date): Document[] {
  return [
    {
      $group: {
        _id: { name: '$name', state: jobStateExpression(now) },
        n: { $sum: 1 },
        paused: { $sum: { $cond: [{ $eq: ['$disabled', true] }, 1, 0] } },
      },
    },
    // The shape jobsOverview folds (JobStateCount).
    { $project: { _id: 0, name: '$_id.name', state: '$_id.state', n: 1, paused: 1 } },
  ];
}

/** Jobs of `name` that completed before `before`: no next run, not locked, not failed last. */
export function completedBeforeFilter(name: string, before: Date): Filter<Document> {
  return {
    name,
    nextRunAt: null,
    lockedAt: null,
    lastFinishedAt: { $lt: before },
    $or: [{ failedAt: null }, { $expr: { $gt: ['$lastFinishedAt', '$failedAt'] } }],
  };
}

/** Serves `completedBeforeFilter`: an index range per name, not a collection scan. */
export const FINISHED_INDEX: IndexDescription = {
  key: { name: 1, lastFinishedAt: 1 },
  name: 'name_lastFinishedAt',
};
