/**
 * Heavy writes go first (src/jobs/writeGate.ts): a delivery retry waits while documents are
 * written at `maxDocuments` per window or more, at most `maxWaitMs`. The rule as pure functions
 * at their boundaries; the gate over a counter the test moves; and a real JobRunner on a real
 * embedded store: a due retry does not start under heavy writes, starts once they stop or once it
 * waited `maxWaitMs`, and stop() ends its wait at once, leaving the job due.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import { JobRunner } from '../../src/jobs/jobRunner.js';
import { documentsPerWindow, RETRY_WRITE_GATE, retryWaitMs, WriteGate } from '../../src/jobs/writeGate.js';
import type { EmbeddedJobRepository } from '../../src/store/embedded/jobs/repository.js';
import type { Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';
import { tempEmbeddedStore } from '../support/stores.js';
import { until } from '../support/timeout.js';
import { deliveryTask } from '../support/webhookSeed.js';

/** Runs `body` while documents are written, `step` every `everyMs`; `written()` counts them. */
async function whileWriting(step: number, everyMs: number, body: (written: () => number) => Promise<void>) {
  let written = 0;
  const writing = setInterval(() => {
    written += step;
  }, everyMs);
  try {
    await body(() => written);
  } finally {
    clearInterval(writing);
  }
}

describe('webhook retry write gate: the rule', () => {
  const rule = { windowMs: 250, maxDocuments: 250, maxWaitMs: 2_000 };

  it('lets a retry start while fewer than maxDocuments were written per window, not at maxDocuments', () => {
    expect(retryWaitMs(249, 0, rule)).to.equal(0);
    expect(retryWaitMs(250, 0, rule)).to.equal(50);
    expect(retryWaitMs(0, 0, rule)).to.equal(0);
  });

  it('lets a retry start once it waited maxWaitMs, whatever the writes', () => {
    expect(retryWaitMs(10_000, 1_999, rule)).to.equal(1);
    expect(retryWaitMs(10_000, 2_000, rule)).to.equal(0);
    expect(retryWaitMs(10_000, 1_900, rule)).to.equal(50);
  });

  it('never waits past maxWaitMs, and waits only under heavy writes (generated)', () => {
    fc.assert(
      fc.property(fc.nat(100_000), fc.nat(10_000), (perWindow, waited) => {
        const wait = retryWaitMs(perWindow, waited, rule);
        const free = perWindow < rule.maxDocuments || waited >= rule.maxWaitMs;
        expect(wait === 0).to.equal(free);
        if (!free) expect(waited + wait).to.be.at.most(rule.maxWaitMs);
      }),
    );
  });

  it('measures documents per window over at least one window', () => {
    // 100 documents in the last window; in half a window (as many per window as 200 would be,
    // were it a window: spread over one window, never less).
    expect(documentsPerWindow({ at: 0, count: 0 }, { at: 250, count: 100 }, 250)).to.equal(100);
    expect(documentsPerWindow({ at: 125, count: 0 }, { at: 250, count: 100 }, 250)).to.equal(100);
    // A base ten windows old: the average since then.
    expect(documentsPerWindow({ at: 0, count: 0 }, { at: 2_500, count: 1_000 }, 250)).to.equal(100);
  });

  it('is what the server uses: 1,000 documents a second, two seconds at most', () => {
    expect(RETRY_WRITE_GATE).to.deep.equal(rule);
    expect((RETRY_WRITE_GATE.maxDocuments * 1_000) / RETRY_WRITE_GATE.windowMs).to.equal(1_000);
  });
});

describe('webhook retry write gate: the counter', () => {
  const rule = { windowMs: 100, maxDocuments: 10, maxWaitMs: 1_000 };

  it('measures the rate over the last window, not since the gate was made', () => {
    let now = 10_000;
    let written = 5;
    const gate = new WriteGate(
      () => written,
      rule,
      () => now,
    );
    expect(gate.perWindow()).to.equal(0);
    // 9 documents per window, looked at every 20 ms for ten windows: light.
    for (let t = 0; t < 50; t++) {
      now += 20;
      if (t % 5 === 4) written += 9;
      expect(gate.perWindow()).to.be.below(10);
    }
    // Then 10 a window: heavy once a whole window of it has been seen.
    for (let t = 0; t < 5; t++) {
      now += 20;
      written += 2;
    }
    expect(gate.perWindow()).to.equal(10);
    // A quiet spell of many windows: the rate falls as the writes stop.
    now += 1_000;
    expect(gate.perWindow()).to.be.below(10);
    now += 20;
    expect(gate.perWindow()).to.equal(0);
  });

  it('measures the last window however often it is asked', () => {
    let now = 0;
    let written = 0;
    const gate = new WriteGate(
      () => written,
      rule,
      () => now,
    );
    for (let t = 0; t < 10_000; t++) {
      now += 1;
      written += 1;
      gate.perWindow();
    }
    // A document a millisecond: 100 a window, measured over the last window only.
    expect(gate.perWindow()).to.be.within(99, 101);
  });

  it('waits while the writes stay heavy, until maxWaitMs; at once when aborted', async () => {
    await whileWriting(50, 5, async (written) => {
      const gate = new WriteGate(written, { windowMs: 60, maxDocuments: 10, maxWaitMs: 300 });
      await new Promise((r) => setTimeout(r, 80));
      const started = Date.now();
      await gate.waitForLightWrites(new AbortController().signal);
      expect(Date.now() - started).to.be.at.least(295);
      const stop = new AbortController();
      const waiting = gate.waitForLightWrites(stop.signal);
      stop.abort();
      const abortedAt = Date.now();
      await waiting;
      expect(Date.now() - abortedAt).to.be.below(50);
    });
  });

  it('lets a retry go under a light trickle of writes at once', async () => {
    await whileWriting(1, 20, async (written) => {
      const gate = new WriteGate(written, { windowMs: 60, maxDocuments: 10, maxWaitMs: 10_000 });
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      await gate.waitForLightWrites(new AbortController().signal);
      expect(Date.now() - started).to.be.below(50);
    });
  });
});

describe('webhook retry write gate: a real JobRunner', function () {
  this.timeout(30_000);
  const logger = pino({ level: 'silent' });
  let store: Store;
  let runner: JobRunner | null = null;
  /**
   * Documents written so far: 2,000 a second while writes run, as during an import. Read from the
   * clock, not counted by a timer: a stall of this process (a collection, a loaded CI machine)
   * held a 5 ms timer back for a whole window, which the gate rightly read as a pause in the
   * writes (a retry then ran "while writes were committing", once, on Node 24 in CI).
   */
  let writtenBefore = 0;
  let writingSince: number | null = null;
  const written = () =>
    writtenBefore + (writingSince === null ? 0 : Math.floor((performance.now() - writingSince) * 2));
  const startWrites = () => {
    writingSince = performance.now();
  };
  const stopWrites = () => {
    writtenBefore = written();
    writingSince = null;
  };

  beforeEach(async () => {
    store = await createTempEmbeddedStore();
  });
  afterEach(async () => {
    stopWrites();
    await runner?.stop();
    runner = null;
    await destroyTempEmbeddedStore(store);
  });

  async function startRunner(maxWaitMs: number, handled: number[]): Promise<JobRunner> {
    const started = new JobRunner(
      store,
      {
        pollMs: 50,
        concurrency: 5,
        attemptTimeoutMs: 1_000,
        errorRetryMs: 200,
        keepFinishedMs: 60_000,
        writeActivity: written,
        writeGate: { windowMs: 100, maxDocuments: 10, maxWaitMs },
      },
      logger,
    );
    started.handleDeliveries(async () => {
      handled.push(Date.now());
      return null;
    });
    await started.start();
    runner = started;
    // A write group after the gate first read the counter: the writes are under way.
    await new Promise((r) => setTimeout(r, 50));
    return started;
  }

  it('starts no retry while writes are heavy, and starts it once they stop', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(60_000, handled);
    await jobs.enqueueDelivery(deliveryTask(0));
    await new Promise((r) => setTimeout(r, 800));
    expect(handled, 'a retry ran while writes were committing').to.have.length(0);
    const pausedAt = Date.now();
    stopWrites();
    await until(() => handled.length === 1, 'one handled delivery', 5_000);
    // The rate falls under 10 a window only once most of a window has passed without writes.
    expect((handled[0] as number) - pausedAt).to.be.at.least(50);
  });

  it('starts a retry after maxWaitMs even while writes never pause', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(400, handled);
    const enqueuedAt = Date.now();
    await jobs.enqueueDelivery(deliveryTask(1));
    await until(() => handled.length === 1, 'one handled delivery', 5_000);
    expect(writingSince, 'writes still committing').to.not.equal(null);
    expect((handled[0] as number) - enqueuedAt).to.be.at.least(400);
  });

  it('stop() ends a retry’s wait at once, with no attempt, and leaves its job due', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(60_000, handled);
    const t = deliveryTask(2);
    await jobs.enqueueDelivery(t);
    const repository = store.agendaBackend().repository;
    await until(
      async () => {
        const { jobs: found } = await repository.queryJobs({ name: 'webhook-delivery' });
        return found.some((j) => j.lastRunAt !== undefined && j.lastRunAt !== null);
      },
      'a delivery job that ran',
      5_000,
    );
    const stopping = Date.now();
    await jobs.stop();
    runner = null;
    expect(Date.now() - stopping, 'stop() waited for the write gate').to.be.below(2_000);
    expect(handled).to.have.length(0);
    const { jobs: found } = await repository.queryJobs({ name: 'webhook-delivery' });
    expect(found).to.have.length(1);
    expect(found[0]?.nextRunAt, 'the job is still due').to.be.instanceOf(Date);
    expect(found[0]?.lockedAt ?? null).to.equal(null);
  });
});

describe('webhook retry hand-over on the embedded store', function () {
  this.timeout(30_000);
  const store = tempEmbeddedStore('each');

  it('commits the jobs handed over by the dispatcher without a sync of their own', async () => {
    const repository = store().agendaBackend().repository as EmbeddedJobRepository;
    const runner = new JobRunner(
      store(),
      { pollMs: 60_000, concurrency: 1, attemptTimeoutMs: 1_000, errorRetryMs: 200, keepFinishedMs: 60_000 },
      pino({ level: 'silent' }),
    );
    runner.handleDeliveries(async () => null);
    await runner.start();
    try {
      const later = Date.now() + 60_000;
      await Promise.all([3, 4, 5].map((n) => runner.enqueueDelivery({ ...deliveryTask(n), runAt: later })));
      const { jobs } = await repository.queryJobs({ name: 'webhook-delivery' });
      expect(jobs).to.have.length(3);
      expect(repository.insertGroups.groups).to.be.at.least(1);
      expect(repository.insertGroups.durable, 'inserts synced on their own').to.equal(0);
    } finally {
      await runner.stop();
    }
  });

  it('syncs each insert group on its own for any other user of the backend', async () => {
    const repository = store().agendaBackend().repository as EmbeddedJobRepository;
    await repository.saveJob(
      { name: 'other', priority: 0, nextRunAt: new Date(), type: 'normal', data: {} },
      undefined,
    );
    expect(repository.insertGroups).to.deep.equal({ groups: 1, durable: 1 });
  });
});
