/**
 * The jobs overview behind the `folio_webhook_jobs` gauge reads every job (a `$group`), so
 * scrapes share one read per OVERVIEW_MAX_AGE_MS, bounded by `maxTimeMS`: through the real
 * driver against a scripted server (test/support/mongoWire.ts) that counts the aggregates.
 */
import { expect } from 'chai';
import { type Document, Long, MongoClient } from 'mongodb';
import { DedupingMongoJobRepository } from '../../src/store/mongodb/jobs/repository.js';
import {
  OVERVIEW_MAX_AGE_MS,
  OVERVIEW_TIME_LIMIT_MS,
  overviewServes,
} from '../../src/store/mongodb/jobs/upkeep.js';
import { errorReply, startWireServer, type WireServer } from '../support/mongoWire.js';

describe('MongoDB jobs overview: one read per interval (scripted server)', function () {
  this.timeout(20_000);
  let server: WireServer;
  let client: MongoClient;
  let failNext = false;

  before(async () => {
    server = await startWireServer((command, name) => {
      if (name === 'createIndexes') return { ok: 1 };
      if (name !== 'aggregate') return undefined;
      if (failNext) {
        failNext = false;
        return errorReply(50, 'MaxTimeMSExpired', 'operation exceeded time limit');
      }
      const rows: Document[] = [{ name: 'deliverWebhook', state: 'queued', n: 3, paused: 0 }];
      return { cursor: { id: Long.ZERO, ns: `db.${command.aggregate}`, firstBatch: rows }, ok: 1 };
    });
    client = new MongoClient(server.uri);
  });

  after(async () => {
    await client?.close();
    await server?.close();
  });

  it('serves a read for OVERVIEW_MAX_AGE_MS, from its start', () => {
    expect(overviewServes(1_000, 1_000)).to.equal(true);
    expect(overviewServes(1_000, 1_000 + OVERVIEW_MAX_AGE_MS - 1)).to.equal(true);
    expect(overviewServes(1_000, 1_000 + OVERVIEW_MAX_AGE_MS)).to.equal(false);
    // A clock that went back does not keep an old read for ever.
    expect(overviewServes(1_000, 999)).to.equal(false);
  });

  it('scrapes within the interval share one aggregate; a failed one is read again', async () => {
    let now = 1_000_000;
    const jobs = new DedupingMongoJobRepository(client.db('folio_system'), 'agendaJobs', () => now);
    await jobs.connect();
    const aggregates = () => server.commands.filter((c) => 'aggregate' in c);
    const [first, second] = await Promise.all([jobs.getJobsOverview(), jobs.getJobsOverview()]);
    now += OVERVIEW_MAX_AGE_MS - 1;
    await jobs.getJobsOverview();
    expect(aggregates()).to.have.length(1);
    expect(aggregates()[0]).to.include({ maxTimeMS: OVERVIEW_TIME_LIMIT_MS });
    expect(first).to.deep.equal(second);
    expect(first[0]).to.include({ name: 'deliverWebhook', queued: 3, total: 3 });
    now += 1;
    failNext = true;
    const failed = await jobs.getJobsOverview().catch((error: unknown) => error);
    expect(failed).to.be.instanceOf(Error);
    await jobs.getJobsOverview();
    expect(aggregates()).to.have.length(3);
  });
});
