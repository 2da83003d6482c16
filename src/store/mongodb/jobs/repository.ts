/**
 * Agenda's MongoDB job repository, plus the port's one promise about jobs: a job saved with
 * `unique({'data.dedupeKey': k}, {insertOnly: true})` exists at most once per name, however many
 * instances save it at the same moment. Agenda upserts unique jobs; two concurrent upserts could
 * both insert, so a unique index on (name, data.dedupeKey) lets one win and the loser retries,
 * finding the winner's job.
 */
import { MongoJobRepository } from '@agendajs/mongo-backend';
import type { JobParameters, JobRepositoryOptions } from 'agenda';
import type { Db, IndexDescription } from 'mongodb';
import { isDuplicateKeyError } from '../serverErrors.js';

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
  ) {
    super({ mongo: jobsDb, db: { collection } });
  }

  override async connect(): Promise<void> {
    await super.connect();
    await this.jobsDb.collection(this.collection.collectionName).createIndexes([DEDUPE_INDEX]);
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
