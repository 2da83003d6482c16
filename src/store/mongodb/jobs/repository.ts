/**
 * Agenda's MongoDB job repository, plus the port's one promise about jobs: a job saved with
 * `unique({'data.dedupeKey': k}, {insertOnly: true})` exists at most once per name, however many
 * instances save it at the same moment. Agenda upserts unique jobs; two concurrent upserts could
 * both insert, so a unique index on (name, data.dedupeKey) lets one win and the loser retries,
 * finding the winner's job.
 */
import { MongoJobRepository } from '@agendajs/mongo-backend';
import type { JobParameters, JobRepositoryOptions, JobsOverview } from 'agenda';
import type { Db, IndexDescription } from 'mongodb';
import { type JobStateCount, jobsOverview } from '../../agendaOverview.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
import { ensureIndexes } from '../layout/indexes.js';
import {
  completedBeforeFilter,
  FINISHED_INDEX,
  OVERVIEW_TIME_LIMIT_MS,
  overviewPipeline,
  overviewServes,
} from './upkeep.js';

export const DEDUPE_INDEX: IndexDescription = {
  key: { name: 1, 'data.dedupeKey': 1 },
  name: 'name_dedupeKey_unique',
  unique: true,
  partialFilterExpression: { 'data.dedupeKey': { $exists: true } },
};

/** True when a failed save lost a dedupe race and may be retried to find the winner's job. */
export function isLostDedupeRace(error: unknown, job: JobParameters): boolean {
  return isDuplicateKeyError(error) && job.uniqueOpts?.insertOnly === true && job.unique !== undefined;
}

export class DedupingMongoJobRepository extends MongoJobRepository {
  constructor(
    private readonly jobsDb: Db,
    collection: string,
    private readonly nowMs: () => number = Date.now,
  ) {
    super({ mongo: jobsDb, db: { collection } });
  }

  override async connect(): Promise<void> {
    await super.connect();
    await ensureIndexes(this.jobsDb, this.collection.collectionName, [DEDUPE_INDEX, FINISHED_INDEX]);
  }

  #overview: { readAtMs: number; rows: Promise<JobsOverview[]> } | null = null;

  /**
   * Counts per name and state, grouped by the server (the library's own loads every job), at most
   * once per OVERVIEW_MAX_AGE_MS: callers meanwhile share the last read, or the one in flight.
   */
  override async getJobsOverview(): Promise<JobsOverview[]> {
    const now = this.nowMs();
    if (this.#overview && overviewServes(this.#overview.readAtMs, now)) return this.#overview.rows;
    const rows = this.collection
      .aggregate<JobStateCount>(overviewPipeline(new Date(now)), { maxTimeMS: OVERVIEW_TIME_LIMIT_MS })
      .toArray()
      .then(jobsOverview);
    const overview = { readAtMs: now, rows };
    this.#overview = overview;
    // A failed read is not served again: the next caller reads afresh.
    rows.catch(() => {
      if (this.#overview === overview) this.#overview = null;
    });
    return rows;
  }

  /** One server-side delete of the jobs of `name` that completed before `beforeMs`. */
  async removeCompletedBefore(name: string, beforeMs: number): Promise<number> {
    const result = await this.collection.deleteMany(completedBeforeFilter(name, new Date(beforeMs)));
    return result.deletedCount;
  }

  override async saveJob<DATA = unknown>(
    job: JobParameters<DATA>,
    options: JobRepositoryOptions | undefined,
  ): Promise<JobParameters<DATA>> {
    try {
      return await super.saveJob(job, options);
    } catch (error) {
      if (!isLostDedupeRace(error, job as JobParameters)) throw error;
      return super.saveJob(job, options);
    }
  }
}
