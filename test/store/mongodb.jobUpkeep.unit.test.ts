/**
 * The MongoDB job store's server-side upkeep (src/store/mongodb/jobs/upkeep.ts), evaluated
 * without a server through mingo: the state expression agrees with Agenda's computeJobState on
 * generated jobs, and the sweep's filter selects exactly the jobs completed before the cutoff.
 */
import { computeJobState, type JobParameters } from 'agenda';
import { expect } from 'chai';
import fc from 'fast-check';
import { aggregate, Query } from 'mingo';
import type { JobStateCount } from '../../src/store/agendaOverview.js';
import { completedBeforeFilter, overviewPipeline } from '../../src/store/mongodb/jobs/upkeep.js';

const HOUR = 3_600_000;

describe('MongoDB store: job upkeep without loading jobs', () => {
  it('groups jobs by the state Agenda computes for each of them', () => {
    const now = new Date();
    const time = fc.option(
      fc.integer({ min: -10, max: 10 }).map((h) => new Date(now.getTime() + h * HOUR + 7)),
      { nil: undefined },
    );
    const job = fc.record({
      name: fc.constantFrom('a', 'b'),
      lockedAt: fc.option(time, { nil: null }),
      failedAt: time,
      lastFinishedAt: time,
      nextRunAt: fc.option(time, { nil: null }),
      repeatInterval: fc.constantFrom(undefined, '', 0, 60_000, '5 minutes'),
      disabled: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(job, { maxLength: 20 }), (jobs) => {
        const docs = jobs.map((j) =>
          Object.fromEntries(Object.entries(j).filter(([, v]) => v !== undefined)),
        );
        const rows = aggregate(docs, overviewPipeline(now)) as unknown as JobStateCount[];
        const expected = new Map<string, number>();
        for (const doc of docs) {
          const key = `${doc.name}/${computeJobState(doc as unknown as JobParameters, now)}`;
          expected.set(key, (expected.get(key) ?? 0) + 1);
        }
        const actual = new Map(rows.map((row) => [`${row.name}/${row.state}`, row.n]));
        expect(actual).to.deep.equal(expected);
        const paused = rows.reduce((sum, row) => sum + row.paused, 0);
        expect(paused).to.equal(jobs.filter((j) => j.disabled).length);
      }),
      { numRuns: 200 },
    );
  });

  it('sweeps only jobs of the name completed strictly before the cutoff', () => {
    const cutoff = new Date();
    const before = new Date(cutoff.getTime() - 1);
    const matches = new Query(completedBeforeFilter('d', cutoff));
    const base = { name: 'd', nextRunAt: null, lockedAt: null };
    expect(matches.test({ ...base, lastFinishedAt: before })).to.equal(true);
    expect(matches.test({ ...base, lastFinishedAt: cutoff })).to.equal(false);
    expect(matches.test({ ...base, name: 'e', lastFinishedAt: before })).to.equal(false);
    expect(matches.test({ ...base, lastFinishedAt: before, nextRunAt: new Date() })).to.equal(false);
    expect(matches.test({ ...base, lastFinishedAt: before, lockedAt: new Date() })).to.equal(false);
    expect(matches.test({ ...base, lastFinishedAt: before, failedAt: before })).to.equal(false);
    expect(
      matches.test({ ...base, lastFinishedAt: before, failedAt: new Date(before.getTime() - 1) }),
    ).to.equal(true);
  });
});
