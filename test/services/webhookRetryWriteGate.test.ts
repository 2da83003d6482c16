/**
 * Writes go first (src/jobs/writeGate.ts): a delivery retry waits for a pause in the document
 * writes, at most `maxWaitMs`. The rule as a pure function at its boundaries; the gate over a
 * counter the test moves; and a real JobRunner on a real embedded store: a due retry does not
 * start while writes commit, starts once they pause or once it waited `maxWaitMs`, and stop()
 * ends its wait at once, leaving the job due.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import { isoNow, newId } from '../../src/ids.js';
import { JobRunner } from '../../src/jobs/jobRunner.js';
import type { DeliveryTask } from '../../src/jobs/webhookDelivery.js';
import { RETRY_WRITE_GATE, retryWaitMs, WriteGate } from '../../src/jobs/writeGate.js';
import type { EmbeddedJobRepository } from '../../src/store/embedded/jobs/repository.js';
import type { Store } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from '../store/embeddedFactory.js';

describe('webhook retry write gate: the rule', () => {
  const rule = { quietMs: 250, maxWaitMs: 2_000 };

  it('lets a retry start once writes were quiet for quietMs, not a millisecond before', () => {
    expect(retryWaitMs(249, 0, rule)).to.equal(1);
    expect(retryWaitMs(250, 0, rule)).to.equal(0);
    expect(retryWaitMs(0, 0, rule)).to.equal(250);
  });

  it('lets a retry start once it waited maxWaitMs, whatever the writes', () => {
    expect(retryWaitMs(0, 1_999, rule)).to.equal(1);
    expect(retryWaitMs(0, 2_000, rule)).to.equal(0);
    expect(retryWaitMs(100, 1_900, rule)).to.equal(100);
  });

  it('never waits past either bound (generated times)', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(10_000), (quietFor, waited) => {
        const wait = retryWaitMs(quietFor, waited, rule);
        const free = quietFor >= rule.quietMs || waited >= rule.maxWaitMs;
        expect(wait === 0).to.equal(free);
        if (!free) {
          expect(wait).to.equal(Math.min(rule.quietMs - quietFor, rule.maxWaitMs - waited));
          expect(quietFor + wait).to.be.at.most(rule.quietMs);
          expect(waited + wait).to.be.at.most(rule.maxWaitMs);
        }
      }),
    );
  });

  it('is what the server uses: a quarter second of quiet, two seconds at most', () => {
    expect(RETRY_WRITE_GATE).to.deep.equal(rule);
  });
});

describe('webhook retry write gate: the counter', () => {
  it('counts a change it finds as a write now, and quiet from then on', () => {
    let now = 1_000;
    let groups = 5;
    const gate = new WriteGate(
      () => groups,
      RETRY_WRITE_GATE,
      () => now,
    );
    // Nothing committed since the gate was made: quiet for ever.
    expect(gate.quietForMs()).to.equal(Number.POSITIVE_INFINITY);
    groups += 1;
    now += 40;
    expect(gate.quietForMs()).to.equal(0);
    now += 249;
    expect(gate.quietForMs()).to.equal(249);
    now += 1;
    expect(gate.quietForMs()).to.equal(250);
  });

  it('waits while the counter keeps moving, until maxWaitMs; at once when aborted', async () => {
    let groups = 0;
    const writing = setInterval(() => {
      groups += 1;
    }, 5);
    try {
      const gate = new WriteGate(() => groups, { quietMs: 60, maxWaitMs: 300 });
      // The counter moves after the gate first read it.
      await new Promise((r) => setTimeout(r, 20));
      const started = Date.now();
      await gate.waitForQuiet(new AbortController().signal);
      expect(Date.now() - started).to.be.at.least(300);
      const stop = new AbortController();
      const waiting = gate.waitForQuiet(stop.signal);
      stop.abort();
      const abortedAt = Date.now();
      await waiting;
      expect(Date.now() - abortedAt).to.be.below(50);
    } finally {
      clearInterval(writing);
    }
  });

  it('lets a retry go once the counter stops, after quietMs', async () => {
    let groups = 0;
    const gate = new WriteGate(() => groups, { quietMs: 60, maxWaitMs: 10_000 });
    groups += 1;
    const started = Date.now();
    await gate.waitForQuiet(new AbortController().signal);
    const waited = Date.now() - started;
    expect(waited).to.be.at.least(60);
    expect(waited).to.be.below(10_000);
  });
});

describe('webhook retry write gate: a real JobRunner', function () {
  this.timeout(30_000);
  const logger = pino({ level: 'silent' });
  let store: Store;
  let runner: JobRunner | null = null;
  let groups = 0;
  let writing: NodeJS.Timeout | null = null;
  /** Document write groups committing every 5 ms, as during an import. */
  const startWrites = () => {
    writing = setInterval(() => {
      groups += 1;
    }, 5);
  };
  const stopWrites = () => {
    if (writing) clearInterval(writing);
    writing = null;
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
        writeActivity: () => groups,
        writeGate: { quietMs: 100, maxWaitMs },
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

  it('starts no retry while writes commit, and starts it once they pause', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(60_000, handled);
    await jobs.enqueueDelivery(task(0));
    await new Promise((r) => setTimeout(r, 800));
    expect(handled, 'a retry ran while writes were committing').to.have.length(0);
    const pausedAt = Date.now();
    stopWrites();
    await until(() => handled.length === 1, 5_000);
    expect((handled[0] as number) - pausedAt).to.be.at.least(100);
  });

  it('starts a retry after maxWaitMs even while writes never pause', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(400, handled);
    const enqueuedAt = Date.now();
    await jobs.enqueueDelivery(task(1));
    await until(() => handled.length === 1, 5_000);
    expect(writing, 'writes still committing').to.not.equal(null);
    expect((handled[0] as number) - enqueuedAt).to.be.at.least(400);
  });

  it('stop() ends a retry’s wait at once, with no attempt, and leaves its job due', async () => {
    const handled: number[] = [];
    startWrites();
    const jobs = await startRunner(60_000, handled);
    const t = task(2);
    await jobs.enqueueDelivery(t);
    const repository = store.agendaBackend().repository;
    await until(async () => {
      const { jobs: found } = await repository.queryJobs({ name: 'webhook-delivery' });
      return found.some((j) => j.lastRunAt !== undefined && j.lastRunAt !== null);
    }, 5_000);
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

function task(n: number): DeliveryTask {
  const deliveryId = newId('dlv');
  return {
    dedupeKey: deliveryId,
    deliveryId,
    webhookId: newId('wh'),
    projectId: newId('prj'),
    env: 'test',
    collection: 'orders',
    event: 'document.created',
    documentId: `doc_${n}`,
    timestamp: isoNow(),
    body: JSON.stringify({ n }),
    bodyKey: `body_${deliveryId}`,
    enqueuedAt: Date.now(),
  };
}

async function until(done: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('webhook retry hand-over on the embedded store', function () {
  this.timeout(30_000);
  let store: Store;
  beforeEach(async () => {
    store = await createTempEmbeddedStore();
  });
  afterEach(async () => {
    await destroyTempEmbeddedStore(store);
  });

  it('commits the jobs handed over by the dispatcher without a sync of their own', async () => {
    const repository = store.agendaBackend().repository as EmbeddedJobRepository;
    const runner = new JobRunner(
      store,
      { pollMs: 60_000, concurrency: 1, attemptTimeoutMs: 1_000, errorRetryMs: 200, keepFinishedMs: 60_000 },
      pino({ level: 'silent' }),
    );
    runner.handleDeliveries(async () => null);
    await runner.start();
    try {
      const later = Date.now() + 60_000;
      await Promise.all([3, 4, 5].map((n) => runner.enqueueDelivery({ ...task(n), runAt: later })));
      const { jobs } = await repository.queryJobs({ name: 'webhook-delivery' });
      expect(jobs).to.have.length(3);
      expect(repository.insertGroups.groups).to.be.at.least(1);
      expect(repository.insertGroups.durable, 'inserts synced on their own').to.equal(0);
    } finally {
      await runner.stop();
    }
  });

  it('syncs each insert group on its own for any other user of the backend', async () => {
    const repository = store.agendaBackend().repository as EmbeddedJobRepository;
    await repository.saveJob(
      { name: 'other', priority: 0, nextRunAt: new Date(), type: 'normal', data: {} },
      undefined,
    );
    expect(repository.insertGroups).to.deep.equal({ groups: 1, durable: 1 });
  });
});
