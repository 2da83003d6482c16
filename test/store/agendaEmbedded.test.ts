/**
 * Agenda 6 on the embedded store's SQLite backend: real Agenda instances, a real database file in
 * a temp dir, opened like the store opens it (WAL, busy_timeout). Several connections to one file
 * in this process check that jobs are claimed by one connection only; worker processes check it
 * again with true parallelism, as two Folio processes sharing the file would run.
 */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  Agenda,
  type AgendaOptions,
  computeJobState,
  Job,
  type JobParameters,
  type JobWithState,
} from 'agenda';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import fc from 'fast-check';
import { rangePageSql } from '../../src/store/embedded/database/chunkedSweep.js';
import { EmbeddedAgendaBackend } from '../../src/store/embedded/jobs/agendaBackend.js';
import { uniqueFilter } from '../../src/store/embedded/jobs/filter.js';
import { CLAIM_SQL } from '../../src/store/embedded/jobs/repository.js';

const POLL_MS = 50;

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BACKEND_MODULE = new URL('../../src/store/embedded/jobs/agendaBackend.ts', import.meta.url).href;

/**
 * A separate process on the same database file, as a second Folio process would be: its own
 * connection and Agenda, running `work` jobs, reporting on stdout (one JSON object a line). On
 * the stdin line `save` it saves 25 unique jobs over 5 keys; at the end of stdin it stops.
 */
const WORKER_SCRIPT = `
import { createInterface } from 'node:readline';
import { Agenda } from 'agenda';
import Database from 'better-sqlite3';
const { EmbeddedAgendaBackend } = await import(process.env.BACKEND_MODULE);
const send = (message) => process.stdout.write(JSON.stringify(message) + '\\n');
const db = new Database(process.env.DB_FILE);
db.pragma('journal_mode = WAL');
db.pragma('busy_timeout = 5000');
const agenda = new Agenda({
  backend: new EmbeddedAgendaBackend(db),
  name: process.env.WORKER,
  processEvery: 20,
  defaultLockLimit: 3,
});
agenda.on('error', (error) => send({ error: String(error) }));
agenda.define('work', async (job) => {
  send({ ran: String(job.attrs._id) });
  await new Promise((resolve) => setTimeout(resolve, 2));
});
await agenda.start();
send({ ready: true });
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== 'save') continue;
  try {
    for (let i = 0; i < 25; i += 1) {
      await agenda.create('sync', { k: i % 5 }).unique({ 'data.k': i % 5 }).schedule('in 1 hour').save();
    }
    send({ saved: true });
  } catch (error) {
    send({ error: String(error) });
  }
}
await agenda.stop();
db.close();
// Agenda may leave a lock-watch timer behind; a stopped worker has nothing left to do.
process.exit(0);
`;

interface WorkerMessage {
  ready?: true;
  ran?: string;
  saved?: true;
  error?: string;
}

/** Resolves with the first truthy value `probe` gives, polling every 10 ms. */
async function waitFor<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 3000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('embedded store: Agenda backend (SQLite)', () => {
  let dir: string;
  let dbs: Database.Database[];
  let agendas: Agenda[];
  let children: ChildProcessByStdio<Writable, Readable, null>[];

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'folio-agenda-'));
    dbs = [];
    agendas = [];
    children = [];
  });

  afterEach(async () => {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = once(child, 'exit');
      child.stdin.end();
      const timer = setTimeout(() => child.kill(), 3000);
      await exited;
      clearTimeout(timer);
    }
    for (const agenda of agendas) await agenda.stop();
    // Let jobs that were mid-run when stop() returned write their final state.
    await sleep(20);
    for (const db of dbs) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new connection to the test database, configured as the embedded store configures its own. */
  function connection(): Database.Database {
    const db = new Database(path.join(dir, 'folio.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    dbs.push(db);
    return db;
  }

  function backendOn(db: Database.Database = connection()): EmbeddedAgendaBackend {
    return new EmbeddedAgendaBackend(db);
  }

  function agendaOn(backend: EmbeddedAgendaBackend, options: Partial<AgendaOptions> = {}): Agenda {
    const agenda = new Agenda({ backend, processEvery: POLL_MS, ...options });
    agendas.push(agenda);
    return agenda;
  }

  /** Starts a worker process (see WORKER_SCRIPT); `messages` collects what it reports. */
  function workerProcess(name: string) {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', WORKER_SCRIPT], {
      cwd: REPO_ROOT,
      env: { ...process.env, DB_FILE: path.join(dir, 'folio.db'), WORKER: name, BACKEND_MODULE },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(child);
    const messages: WorkerMessage[] = [];
    createInterface({ input: child.stdout }).on('line', (line) =>
      messages.push(JSON.parse(line) as WorkerMessage),
    );
    return { name, child, messages };
  }

  async function jobById(agenda: Agenda, id: unknown): Promise<JobWithState | undefined> {
    return (await agenda.queryJobs({ id: String(id) })).jobs[0];
  }

  describe('running jobs', () => {
    it('runs a job scheduled with now() and hands it the job data', async () => {
      const db = connection();
      const agenda = agendaOn(backendOn(db));
      const received: unknown[] = [];
      agenda.define('greet', async (job) => {
        received.push(job.attrs.data);
      });
      await agenda.start();

      const job = await agenda.now('greet', { to: 'ada', tags: ['a', 'b'], nested: { n: 3, ok: true } });
      expect(job.attrs._id).to.match(/^[0-9a-f]{24}$/);

      const done = await waitFor('the job to finish', async () => {
        const stored = await jobById(agenda, job.attrs._id);
        return stored?.lastFinishedAt && !stored.lockedAt ? stored : undefined;
      });
      expect(received).to.deep.equal([{ to: 'ada', tags: ['a', 'b'], nested: { n: 3, ok: true } }]);
      expect(done.nextRunAt).to.equal(null);
      expect(done.lastRunAt).to.be.instanceOf(Date);
      expect(done.state).to.equal('completed');

      await agenda.stop();
      // The store owns the connection: stopping Agenda must not close it.
      expect(db.open).to.equal(true);
    });

    it('records failCount and failReason of a failing job, and runs it again once re-scheduled', async () => {
      const agenda = agendaOn(backendOn());
      let calls = 0;
      agenda.define('flaky', async () => {
        calls += 1;
        if (calls === 1) throw new Error('boom');
      });
      await agenda.start();
      const job = await agenda.now('flaky', { attempt: 'first' });

      const failed = await waitFor('the failure to be recorded', async () => {
        const stored = await jobById(agenda, job.attrs._id);
        return stored?.failCount === 1 && !stored.lockedAt ? stored : undefined;
      });
      expect(failed.failReason).to.equal('boom');
      expect(failed.failedAt).to.be.instanceOf(Date);
      expect(failed.state).to.equal('failed');

      const params = await agenda.db.getJobById(String(job.attrs._id));
      expect(params).to.not.equal(null);
      const retry = new Job(agenda, params as JobParameters<void>);
      await retry.schedule(new Date()).save();

      const recovered = await waitFor('the re-scheduled run to succeed', async () => {
        const stored = await jobById(agenda, job.attrs._id);
        return stored?.state === 'completed' ? stored : undefined;
      });
      expect(calls).to.equal(2);
      expect(recovered.failCount).to.equal(0);
      expect(recovered.lastFinishedAt?.getTime()).to.be.greaterThan(failed.failedAt?.getTime() ?? 0);
    });

    it('retries a failing job with its backoff strategy until it succeeds', async () => {
      const agenda = agendaOn(backendOn());
      let attempts = 0;
      const retries: number[] = [];
      agenda.define(
        'eventually',
        async () => {
          attempts += 1;
          if (attempts < 3) throw new Error(`attempt ${attempts} failed`);
        },
        { backoff: ({ attempt }) => (attempt <= 5 ? 20 : null) },
      );
      agenda.on('retry', (_job: unknown, details: { attempt: number }) => retries.push(details.attempt));
      await agenda.start();
      const job = await agenda.now('eventually', {});

      const done = await waitFor('the third attempt to succeed', async () => {
        const stored = await jobById(agenda, job.attrs._id);
        return stored?.state === 'completed' ? stored : undefined;
      });
      expect(attempts).to.equal(3);
      expect(retries).to.deep.equal([1, 2]);
      expect(done.failReason).to.equal('attempt 2 failed');
      expect(done.failCount).to.equal(0);
    });

    it('repeats an every() job, computing each next run from the interval', async () => {
      const agenda = agendaOn(backendOn());
      const runs: number[] = [];
      agenda.define('tick', async () => {
        runs.push(Date.now());
      });
      await agenda.every(200, 'tick');
      await agenda.start();

      await waitFor('two runs', () => runs.length >= 2);
      expect(runs[1]! - runs[0]!).to.be.at.least(190);
      const { jobs, total } = await agenda.queryJobs({ name: 'tick' });
      expect(total).to.equal(1);
      const tick = jobs[0]!;
      expect(tick.type).to.equal('single');
      expect(tick.repeatInterval).to.equal(200);
      expect(tick.state).to.equal('repeating');
      expect(tick.nextRunAt!.getTime() - tick.lastRunAt!.getTime()).to.equal(200);
    });

    it('keeps one every() job, and its planned next run, when it is declared again', async () => {
      const agenda = agendaOn(backendOn());
      const first = await agenda.every('1 hour', 'hourly', { v: 1 });
      await sleep(5);
      await agenda.every('1 hour', 'hourly', { v: 2 });

      const { jobs, total } = await agenda.queryJobs({ name: 'hourly' });
      expect(total).to.equal(1);
      expect(jobs[0]!._id).to.equal(first.attrs._id);
      expect(jobs[0]!.data).to.deep.equal({ v: 2 });
      expect(jobs[0]!.repeatInterval).to.equal('1 hour');
      expect(jobs[0]!.nextRunAt!.getTime()).to.equal(first.attrs.nextRunAt!.getTime());
    });

    it('debounces rapid saves of one key into a single run, a delay after the last save', async () => {
      const agenda = agendaOn(backendOn());
      const runs: Array<{ data: unknown; at: number }> = [];
      agenda.define('reindex', async (job) => {
        runs.push({ data: job.attrs.data, at: Date.now() });
      });
      await agenda.start();
      // The delay is 20 times the gap between saves, so a loaded machine stretching the gaps
      // does not let the delay run out between them.
      const delayMs = 600;
      let lastSaveAt = 0;
      for (const v of [1, 2, 3]) {
        await agenda.nowDebounced(
          'reindex',
          { entity: 'products', v },
          { 'data.entity': 'products' },
          delayMs,
        );
        lastSaveAt = Date.now();
        await sleep(30);
      }
      await waitFor('the debounced run', () => runs.length > 0);
      await sleep(150);
      expect(runs.map((run) => run.data)).to.deep.equal([{ entity: 'products', v: 3 }]);
      // Measured from after the last save returned, so a little under the delay.
      expect(runs[0]!.at - lastSaveAt).to.be.at.least(delayMs - 100);
    });

    it('keeps a job paused with disable() paused when every() declares it again', async () => {
      const agenda = agendaOn(backendOn());
      await agenda.every('1 hour', 'report');
      expect(await agenda.disable({ name: 'report' })).to.equal(1);
      await agenda.every('1 hour', 'report');
      const { jobs } = await agenda.queryJobs({ name: 'report' });
      expect(jobs.map((job) => job.disabled)).to.deep.equal([true]);
    });
  });

  describe('locking', () => {
    it('never runs a job twice when two Agenda instances share the database file', async () => {
      const runs: Array<{ id: string; worker: string }> = [];
      const workers = ['one', 'two'].map((worker) => {
        // A low lock limit makes the instances take turns instead of one claiming every job.
        const agenda = agendaOn(backendOn(), { name: worker, defaultLockLimit: 2 });
        agenda.define('work', async (job) => {
          runs.push({ id: String(job.attrs._id), worker });
          await sleep(5);
        });
        return agenda;
      });
      const ids = new Set<string>();
      for (let i = 0; i < 30; i += 1) ids.add(String((await workers[0]!.now('work', { i })).attrs._id));

      await Promise.all(workers.map((agenda) => agenda.start()));
      await waitFor('all jobs to run', () => runs.length >= ids.size);
      await sleep(3 * POLL_MS);

      expect(runs).to.have.length(ids.size);
      expect(new Set(runs.map((run) => run.id))).to.deep.equal(ids);
      expect(new Set(runs.map((run) => run.worker))).to.deep.equal(new Set(['one', 'two']));
    });

    it('never runs a job twice, nor duplicates a unique job, across two processes', async function () {
      this.timeout(20_000);
      // Creates the table before the workers start, so their connect() calls only find it.
      const agenda = agendaOn(backendOn());
      await agenda.ready;
      const workers = [workerProcess('p1'), workerProcess('p2')];
      await waitFor(
        'both workers to start',
        () => workers.every((w) => w.messages.some((m) => m.ready)),
        15_000,
      );

      for (const worker of workers) worker.child.stdin.write('save\n');
      const ids = new Set<string>();
      for (let i = 0; i < 60; i += 1) ids.add(String((await agenda.now('work', { i })).attrs._id));

      const runs = () =>
        workers.flatMap((w) => w.messages.filter((m) => m.ran).map((m) => ({ id: m.ran, by: w.name })));
      await waitFor('all jobs to run', () => runs().length >= ids.size, 10_000);
      await waitFor('both workers to save', () =>
        workers.every((w) => w.messages.some((m) => m.saved || m.error)),
      );
      await sleep(100);

      expect(workers.flatMap((w) => w.messages.filter((m) => m.error))).to.deep.equal([]);
      expect(runs()).to.have.length(ids.size);
      expect(new Set(runs().map((run) => run.id))).to.deep.equal(ids);
      expect(new Set(runs().map((run) => run.by))).to.deep.equal(new Set(['p1', 'p2']));
      const sync = await agenda.queryJobs({ name: 'sync' });
      expect(sync.jobs.map((job) => (job.data as { k: number }).k).sort()).to.deep.equal([0, 1, 2, 3, 4]);
    });

    it('lets no other connection claim or lock a claimed job until its lock expires', async () => {
      const a = backendOn().repository;
      const b = backendOn().repository;
      await a.connect();
      await b.connect();
      const now = new Date();
      const saved = await a.saveJob(
        { name: 'deliver', priority: 0, nextRunAt: now, type: 'normal', data: { n: 1 } },
        undefined,
      );
      const horizon = new Date(now.getTime() + 1000);
      const longAgo = new Date(now.getTime() - 60_000);

      const claimed = await a.getNextJobToRun('deliver', horizon, longAgo, now, { lastModifiedBy: 'a' });
      expect(claimed?._id).to.equal(saved._id);
      expect(claimed?.lockedAt?.getTime()).to.equal(now.getTime());
      expect(claimed?.lastModifiedBy).to.equal('a');

      expect(await b.getNextJobToRun('deliver', horizon, longAgo, undefined, undefined)).to.equal(undefined);
      expect(await b.lockJob(saved, undefined)).to.equal(undefined);

      // Once the lock is older than the lock lifetime (deadline past lockedAt), it is up for grabs.
      const afterLock = new Date(now.getTime() + 1);
      const reclaimed = await b.getNextJobToRun('deliver', horizon, afterLock, undefined, {
        lastModifiedBy: 'b',
      });
      expect(reclaimed?._id).to.equal(saved._id);
      expect(reclaimed?.lastModifiedBy).to.equal('b');
    });

    it('runs a job again once the lock of a worker that died mid-run expires', async () => {
      const crashed = backendOn().repository;
      await crashed.connect();
      const saved = await crashed.saveJob(
        { name: 'resume', priority: 0, nextRunAt: new Date(), type: 'normal', data: {} },
        undefined,
      );
      // What a worker leaves behind when it dies after starting a one-time job.
      const claimed = await crashed.getNextJobToRun(
        'resume',
        new Date(Date.now() + 1000),
        new Date(0),
        undefined,
        {
          lastModifiedBy: 'crashed',
        },
      );
      expect(claimed?._id).to.equal(saved._id);
      const lockedAt = claimed!.lockedAt!.getTime();
      await crashed.saveJobState({ ...claimed!, lastRunAt: new Date(lockedAt), nextRunAt: null }, undefined);

      const lockLifetime = 300;
      const agenda = agendaOn(backendOn(), { defaultLockLifetime: lockLifetime });
      let ranAt = 0;
      agenda.define('resume', async () => {
        ranAt = Date.now();
      });
      await agenda.start();

      const done = await waitFor('the abandoned job to run', async () => {
        const stored = await jobById(agenda, saved._id);
        return stored?.lastFinishedAt && !stored.lockedAt ? stored : undefined;
      });
      expect(ranAt - lockedAt).to.be.at.least(lockLifetime);
      expect(done.state).to.equal('completed');
    });

    it('releases locks of jobs claimed but not started when Agenda stops', async () => {
      const backend = backendOn();
      const agenda = agendaOn(backend);
      agenda.define('later', async () => {});
      // Due within the scan horizon, so claimed and held in memory until its time comes.
      const job = await agenda.schedule(new Date(Date.now() + 2 * POLL_MS), 'later', {});
      await agenda.start();
      await waitFor('the job to be claimed', async () => (await jobById(agenda, job.attrs._id))?.lockedAt);
      await agenda.stop();
      expect((await jobById(agenda, job.attrs._id))?.lockedAt).to.equal(undefined);
    });
  });

  describe('selecting jobs', () => {
    async function seed(agenda: Agenda) {
      agenda.define('mail', async () => {});
      agenda.define('sms', async () => {});
      const sms = await agenda.now('sms', { to: 'a' });
      const mail1 = await agenda.schedule('in 1 hour', 'mail', { to: 'a', meta: { lang: 'en' } });
      const mail2 = await agenda.schedule('in 2 hours', 'mail', { to: 'b', meta: { lang: 'fr' } });
      const orphan = await agenda.schedule('in 3 hours', 'orphan', { to: 'c' });
      return {
        sms: String(sms.attrs._id),
        mail1: String(mail1.attrs._id),
        mail2: String(mail2.attrs._id),
        orphan: String(orphan.attrs._id),
      };
    }

    const idsOf = (result: { jobs: JobWithState[] }) => result.jobs.map((job) => String(job._id));

    it('queries jobs by name, id, data, search text and computed state, sorted and paginated', async () => {
      const agenda = agendaOn(backendOn());
      const ids = await seed(agenda);

      expect(idsOf(await agenda.queryJobs({ name: 'mail', sort: { nextRunAt: 'asc' } }))).to.deep.equal([
        ids.mail1,
        ids.mail2,
      ]);
      expect((await agenda.queryJobs({ names: ['mail', 'sms'] })).total).to.equal(3);
      expect(idsOf(await agenda.queryJobs({ id: ids.mail2 }))).to.deep.equal([ids.mail2]);
      expect((await agenda.queryJobs({ ids: [ids.sms, ids.orphan] })).total).to.equal(2);
      expect(idsOf(await agenda.queryJobs({ data: { meta: { lang: 'fr' } } }))).to.deep.equal([ids.mail2]);
      expect(idsOf(await agenda.queryJobs({ data: { to: 'a' }, sort: { name: 'asc' } }))).to.deep.equal([
        ids.mail1,
        ids.sms,
      ]);
      expect(idsOf(await agenda.queryJobs({ search: 'MAI' })).sort()).to.deep.equal(
        [ids.mail1, ids.mail2].sort(),
      );
      expect(idsOf(await agenda.queryJobs({ search: '%' }))).to.deep.equal([]);
      expect(idsOf(await agenda.queryJobs({ state: 'queued' }))).to.deep.equal([ids.sms]);
      expect((await agenda.queryJobs({ state: 'scheduled' })).total).to.equal(3);

      const page = await agenda.queryJobs({ sort: { nextRunAt: 'asc' }, skip: 1, limit: 2 });
      expect(page.total).to.equal(4);
      expect(idsOf(page)).to.deep.equal([ids.mail1, ids.mail2]);
      const statePage = await agenda.queryJobs({
        state: 'scheduled',
        sort: { nextRunAt: 'desc' },
        skip: 1,
        limit: 1,
      });
      expect(statePage.total).to.equal(3);
      expect(idsOf(statePage)).to.deep.equal([ids.mail2]);

      const overview = await agenda.getJobsOverview();
      expect(overview.find((entry) => entry.name === 'mail')).to.include({ total: 2, scheduled: 2 });
      expect(overview.find((entry) => entry.name === 'sms')).to.include({ total: 1, queued: 1 });
      expect(await agenda.db.getDistinctJobNames()).to.deep.equal(['mail', 'orphan', 'sms']);
      expect(await agenda.db.getQueueSize()).to.equal(1);
    });

    it('disables and enables jobs, counting only jobs whose flag changed', async () => {
      const agenda = agendaOn(backendOn());
      const ids = await seed(agenda);

      expect(await agenda.disable({ name: 'mail' })).to.equal(2);
      expect(await agenda.disable({ name: 'mail' })).to.equal(0);
      expect(idsOf(await agenda.queryJobs({ state: 'paused', sort: { nextRunAt: 'asc' } }))).to.deep.equal([
        ids.mail1,
        ids.mail2,
      ]);
      expect((await agenda.queryJobs({ includeDisabled: false })).total).to.equal(2);
      expect(await agenda.enable({ id: ids.mail1 })).to.equal(1);
      expect(idsOf(await agenda.queryJobs({ state: 'paused' }))).to.deep.equal([ids.mail2]);
      expect(await agenda.disable({})).to.equal(0);
    });

    it('cancels jobs matching a selector, never all jobs for an empty one, and purges undefined names', async () => {
      const agenda = agendaOn(backendOn());
      const ids = await seed(agenda);

      expect(await agenda.cancel({})).to.equal(0);
      expect(await agenda.cancel({ data: { to: 'a' } })).to.equal(2);
      expect(await agenda.purge()).to.equal(1);
      expect(idsOf(await agenda.queryJobs())).to.deep.equal([ids.mail2]);
      expect(await agenda.cancel({ names: ['sms', 'mail'] })).to.equal(1);
      await seed(agenda);
      expect(await agenda.cancel({ notNames: ['mail'] })).to.equal(2);
      expect(await agenda.cancelAll()).to.equal(2);
      expect((await agenda.queryJobs()).total).to.equal(0);
    });

    it('does not run a disabled job until it is enabled', async () => {
      const agenda = agendaOn(backendOn());
      let runs = 0;
      agenda.define('paused', async () => {
        runs += 1;
      });
      await agenda.create('paused', {}).schedule(new Date()).disable().save();
      await agenda.start();
      await sleep(4 * POLL_MS);
      expect(runs).to.equal(0);

      expect(await agenda.enable({ name: 'paused' })).to.equal(1);
      await waitFor('the enabled job to run', () => runs === 1);
    });
  });

  describe('unique jobs', () => {
    it('keeps one job per unique key: later saves update it, insertOnly leaves it alone', async () => {
      const agenda = agendaOn(backendOn());
      const save = (data: { key: number; v: string }, insertOnly = false) =>
        agenda
          .create('notify', data)
          .unique({ 'data.key': data.key }, { insertOnly })
          .schedule('in 1 hour')
          .save();

      const first = await save({ key: 1, v: 'a' });
      const second = await save({ key: 1, v: 'b' });
      expect(second.attrs._id).to.equal(first.attrs._id);
      const third = await save({ key: 1, v: 'c' }, true);
      expect(third.attrs._id).to.equal(first.attrs._id);
      expect((await jobById(agenda, first.attrs._id))?.data).to.deep.equal({ key: 1, v: 'b' });

      const other = await save({ key: 2, v: 'x' });
      expect(other.attrs._id).to.not.equal(first.attrs._id);
      expect((await agenda.queryJobs({ name: 'notify' })).total).to.equal(2);
    });

    it('does not duplicate a unique job saved at once through two connections', async () => {
      const agendaA = agendaOn(backendOn());
      const agendaB = agendaOn(backendOn());
      const saves = [agendaA, agendaB, agendaA, agendaB, agendaA, agendaB].map((agenda, i) =>
        agenda.create('sync', { account: 'acc_1', i }).unique({ 'data.account': 'acc_1' }).save(),
      );
      const saved = await Promise.all(saves);
      expect(new Set(saved.map((job) => String(job.attrs._id))).size).to.equal(1);
      expect((await agendaA.queryJobs({ name: 'sync' })).total).to.equal(1);
    });

    it('refuses MongoDB query operators in a unique key instead of misreading them', async () => {
      const agenda = agendaOn(backendOn());
      const attempt = agenda
        .create('sync', { n: 1 })
        .unique({ 'data.n': { $gt: 0 } })
        .save();
      await expectRejection(attempt, /operators are not supported/);
    });
  });

  describe('upkeep without loading jobs', () => {
    /** The plan SQLite chooses for `sql`, one line per step. */
    function plan(db: Database.Database, sql: string, params: unknown[]): string {
      return db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(...params)
        .map((row) => (row as { detail: string }).detail)
        .join('\n');
    }

    it('finds the job of a data.dedupeKey through its index, not a scan of every job', async () => {
      const db = connection();
      const backend = backendOn(db);
      await backend.connect();
      const filter = uniqueFilter('webhook-delivery', { 'data.dedupeKey': 'dlv_1' });
      const steps = plan(db, `SELECT * FROM agenda_jobs ${filter.where} LIMIT 1`, filter.params);
      expect(steps).to.match(/USING INDEX agenda_jobs_dedupe/);
      expect(steps).to.not.match(/SCAN agenda_jobs/);

      // Same rule as before: one job per key; other keys still match on their own.
      const agenda = agendaOn(backend);
      const save = (key: string, v: number) =>
        agenda
          .create('webhook-delivery', { dedupeKey: key, v })
          .unique({ 'data.dedupeKey': key }, { insertOnly: true })
          .save();
      const first = await save('dlv_1', 1);
      expect(String((await save('dlv_1', 2)).attrs._id)).to.equal(String(first.attrs._id));
      expect(String((await save('dlv_2', 3)).attrs._id)).to.not.equal(String(first.attrs._id));
      expect((await jobById(agenda, first.attrs._id))?.data).to.deep.equal({ dedupeKey: 'dlv_1', v: 1 });
    });

    it('claims the next job from index order, never sorting every due job', async () => {
      const db = connection();
      await backendOn(db).connect();
      const steps = plan(db, CLAIM_SQL, [
        { name: 'x', nextScanAt: 1, lockDeadline: 1, lockedAt: 1, by: null },
      ] as unknown[]);
      expect(steps).to.match(/USING (COVERING )?INDEX agenda_jobs_claim_order/);
      expect(steps).to.not.match(/SCAN agenda_jobs/);
    });

    it('counts and lists jobs by computed state in the database, as Agenda computes each job', async () => {
      const hour = 3_600_000;
      // A minute off the hour: a time `now + 7 ms` fell between the expected state's clock and
      // the database's, and the two disagreed (queued vs scheduled) now and then.
      const at = (h: number) => new Date(Date.now() + h * hour + 60_000);
      const time = fc.option(fc.integer({ min: -10, max: 10 }).map(at), {
        nil: undefined,
      });
      const jobArb = fc.record({
        lockedAt: time,
        failedAt: time,
        lastFinishedAt: time,
        nextRunAt: fc.option(fc.integer({ min: -10, max: 10 }).map(at), {
          nil: null,
        }),
        repeatInterval: fc.constantFrom(undefined, '', 0, 60_000, '5 minutes'),
        disabled: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(jobArb, { maxLength: 12 }), async (generated) => {
          const backend = backendOn();
          await backend.connect();
          const repository = backend.repository;
          await repository.purgeAllJobs();
          for (const fields of generated) {
            const job = { name: 'x', type: 'normal', priority: 0, data: {}, ...fields } as JobParameters;
            if (job.repeatInterval === undefined) delete job.repeatInterval;
            await repository.saveJob(job, undefined);
          }
          const stored = (await repository.queryJobs({ name: 'x' })).jobs;
          const expected: Record<string, number> = {};
          for (const job of stored) {
            const state = computeJobState(job);
            expected[state] = (expected[state] ?? 0) + 1;
          }
          const overview = (await repository.getJobsOverview()).find((o) => o.name === 'x');
          for (const state of [
            'running',
            'failed',
            'repeating',
            'scheduled',
            'queued',
            'completed',
          ] as const) {
            expect(overview?.[state] ?? 0, state).to.equal(expected[state] ?? 0);
            expect((await repository.queryJobs({ state })).total, state).to.equal(expected[state] ?? 0);
          }
          expect(overview?.paused ?? 0).to.equal(generated.filter((job) => job.disabled).length);
        }),
        { numRuns: 40 },
      );
    });

    it('sweeps jobs completed before the cutoff through ranges of the finished index, keeping the rest', async () => {
      const db = connection();
      const backend = backendOn(db);
      await backend.connect();
      const repository = backend.repository;
      const cutoff = Date.now();
      const job = (fields: Partial<JobParameters>) =>
        repository.saveJob(
          { name: 'd', type: 'normal', priority: 0, data: {}, nextRunAt: null, ...fields },
          undefined,
        );
      const old = await job({ lastFinishedAt: new Date(cutoff - 1) });
      await job({ lastFinishedAt: new Date(cutoff) }); // at the cutoff: kept
      await job({ lastFinishedAt: new Date(cutoff - 5), nextRunAt: new Date(cutoff + 60_000) }); // retry due
      await job({ lastFinishedAt: new Date(cutoff - 5), lockedAt: new Date(cutoff) }); // running
      await job({ lastFinishedAt: new Date(cutoff - 5), failedAt: new Date(cutoff - 5) }); // failed last
      await repository.saveJob(
        {
          name: 'other',
          type: 'normal',
          priority: 0,
          data: {},
          nextRunAt: null,
          lastFinishedAt: new Date(cutoff - 1),
        },
        undefined,
      );

      expect(await repository.removeCompletedBefore('d', cutoff)).to.equal(1);
      expect(await repository.getJobById(String(old._id))).to.equal(null);
      expect((await repository.queryJobs({ name: 'd' })).total).to.equal(4);
      expect((await repository.queryJobs({ name: 'other' })).total).to.equal(1);
      // The sweep's own page statement (chunkedSweep.ts), as the repository builds it.
      const steps = plan(
        db,
        rangePageSql(
          'agenda_jobs',
          'agenda_jobs_finished',
          'last_finished_at',
          'name = @name AND next_run_at IS NULL AND locked_at IS NULL AND last_finished_at < @before',
        ),
        [{ name: 'd', before: cutoff, afterAt: 0, afterRowid: 0, rows: 10 }],
      );
      expect(steps).to.match(/USING INDEX agenda_jobs_finished/);
    });
  });

  describe('stored form', () => {
    it('stores every JobParameters field and reads it back unchanged', async () => {
      const repository = backendOn().repository;
      await repository.connect();
      const at = (iso: string) => new Date(iso);
      const input: JobParameters = {
        name: 'full',
        priority: 10,
        nextRunAt: at('2030-01-02T03:04:05.678Z'),
        type: 'normal',
        data: { list: [1, { deep: null }], text: 'é"\'', flag: false },
        lockedAt: at('2030-01-01T00:00:00.001Z'),
        lastFinishedAt: at('2029-12-31T00:00:00.000Z'),
        failedAt: at('2029-12-30T00:00:00.000Z'),
        failCount: 2,
        failReason: 'timeout',
        repeatTimezone: 'Europe/Paris',
        lastRunAt: at('2029-12-29T00:00:00.000Z'),
        repeatInterval: '5 minutes',
        repeatAt: '3:30pm',
        disabled: false,
        progress: 42.5,
        fork: true,
        startDate: at('2029-01-01T00:00:00.000Z'),
        endDate: at('2031-01-01T00:00:00.000Z'),
        skipDays: [0, 6],
        debounceStartedAt: at('2029-12-28T00:00:00.000Z'),
      };
      const saved = await repository.saveJob(input, { lastModifiedBy: 'worker-1' });
      expect(saved._id).to.match(/^[0-9a-f]{24}$/);
      const expected = { ...input, _id: saved._id, lastModifiedBy: 'worker-1' };
      expect(saved).to.deep.equal(expected);
      expect(await repository.getJobById(String(saved._id))).to.deep.equal(expected);

      const bare = await repository.saveJob(
        { name: 'bare', priority: 0, nextRunAt: null, type: 'normal', data: undefined },
        undefined,
      );
      expect(await repository.getJobById(String(bare._id))).to.deep.equal({
        _id: bare._id,
        name: 'bare',
        priority: 0,
        nextRunAt: null,
        type: 'normal',
        data: undefined,
      });
      expect(await repository.getJobById('000000000000000000000000')).to.equal(null);
    });

    it('keeps the run state a re-save does not carry, and fails to save state of a removed job', async () => {
      const repository = backendOn().repository;
      await repository.connect();
      const saved = await repository.saveJob(
        { name: 'job', priority: 0, nextRunAt: new Date(), type: 'normal', data: { v: 1 } },
        undefined,
      );
      const claimed = await repository.getNextJobToRun(
        'job',
        new Date(Date.now() + 1000),
        new Date(0),
        undefined,
        undefined,
      );
      await repository.saveJobState(
        { ...claimed!, failCount: 1, failReason: 'down', failedAt: new Date(), progress: 10 },
        undefined,
      );

      // What Job.save() sends: the definition, without processor-managed fields.
      const resaved = await repository.saveJob(
        { _id: saved._id, name: 'job', priority: 5, nextRunAt: new Date(), type: 'normal', data: { v: 2 } },
        undefined,
      );
      expect(resaved).to.include({ priority: 5, failCount: 1, failReason: 'down', progress: 10 });
      expect(resaved.data).to.deep.equal({ v: 2 });
      expect(resaved.lockedAt?.getTime()).to.equal(claimed!.lockedAt!.getTime());

      expect(await repository.removeJobs({ id: saved._id })).to.equal(1);
      await expectRejection(repository.saveJobState(claimed!, undefined), /no longer exists/);
      // Saving a removed job by id hands it back unchanged instead of resurrecting it.
      const gone = {
        _id: saved._id,
        name: 'job',
        priority: 0,
        nextRunAt: null,
        type: 'normal' as const,
        data: {},
      };
      expect(await repository.saveJob(gone, undefined)).to.equal(gone);
      expect(await repository.getJobById(String(saved._id))).to.equal(null);
    });

    it('creates its table idempotently on every connect', async () => {
      const db = connection();
      const first = backendOn(db);
      await first.connect();
      await first.connect();
      await backendOn(db).connect();
      const tables = db
        .prepare<[], { name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'agenda_jobs'",
        )
        .all();
      expect(tables).to.have.length(1);
      expect(first.ownsConnection).to.equal(false);
      expect(first.notificationChannel).to.equal(undefined);
    });
  });
});

async function expectRejection(promise: Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect((error as Error).message).to.match(message);
    return;
  }
  expect.fail('expected a rejection');
}
