/**
 * Agenda over the store's own backend, running webhook deliveries. New jobs saved by this
 * process are picked up at once through Agenda's in-memory notification channel; retries and
 * jobs saved by other instances are found by polling every `pollMs`.
 *
 * Shutdown (`stop`): Agenda stops taking jobs and releases those it had claimed but not started;
 * attempts in flight get a short grace to finish, the rest are aborted and reschedule themselves,
 * and `stop` waits for Agenda to have saved them, so the store can close right after. Agenda's own leftover timers keep nothing
 * waiting: `folio serve` exits when `close()` resolves.
 */
import { setMaxListeners } from 'node:events';
import { Agenda, InMemoryNotificationChannel, type Job } from 'agenda';
import type { Logger } from 'pino';
import { attemptLockTtlMs } from '../store/attemptLock.js';
import { DELIVERY_JOB, type DeliveryJob, type DeliveryTask } from '../store/deliveryJob.js';
import { EmbeddedJobRepository } from '../store/embedded/jobs/repository.js';
import type { DeliveryBodyRepository, JobUpkeep, Store } from '../store/port.js';
import type { DeliveryHandler, DeliveryQueue } from './webhookDelivery.js';
import { RETRY_WRITE_GATE, WriteGate, type WriteGateRule } from './writeGate.js';

export interface JobRunnerOptions {
  pollMs: number;
  concurrency: number;
  /** Longest a delivery attempt may take; a claimed job whose lock is older is taken over. */
  attemptTimeoutMs: number;
  /** Pause before running again a delivery whose handler failed (the store was unreachable). */
  errorRetryMs: number;
  /** Finished delivery jobs are kept this long (the job history); delivery records dedupe replays. */
  keepFinishedMs: number;
  /**
   * Agenda's lock on a running job (default: the attempt lock's lifetime plus a poll, well above
   * the attempt's time limit). Renewed (touched) every third of it while the job runs. Tests set
   * it short to show that the delivery's attempt lock, not this one, keeps attempts single.
   */
  lockLifetimeMs?: number;
  /**
   * A counter of the documents written (the embedded store's). Given, a retry waits while those
   * writes are heavy before it starts (writeGate.ts); absent (MongoDB, whose writes do not share
   * this process's writer), it starts at once.
   */
  writeActivity?: () => number;
  /** How long retries wait for writes (default RETRY_WRITE_GATE). */
  writeGate?: WriteGateRule;
}

/**
 * How long stop() lets attempts in flight finish on their own before aborting them: an attempt
 * cut short after the receiver took it would be sent again (at least once, but needlessly).
 */
const STOP_GRACE_MS = 3_000;
/** Due retries Agenda claims per poll, in rounds of the concurrency (see lockLimit). */
const RETRY_ROUNDS_PER_POLL = 5;
/**
 * A kept body outlives the latest retry scheduled with it by this much: room for a server that
 * was down when the retry fell due. The embedded store also never removes a body an unfinished
 * job names; on MongoDB the TTL index goes by this time alone.
 */
export const BODY_GRACE_MS = 24 * 60 * 60 * 1000;

/** How long stop() then waits for aborted attempts to be saved before letting the store close. */
const STOP_WAIT_MS = 5_000;

export class JobRunner implements DeliveryQueue {
  readonly #agenda: Agenda;
  readonly #upkeep: JobUpkeep;
  readonly #bodies: DeliveryBodyRepository;
  readonly #embedded: boolean;
  readonly #shutdown = new AbortController();
  /** Aborted when stop() begins: retries waiting for writes to pause start no attempt. */
  readonly #stopping = new AbortController();
  readonly #gate: WriteGate | null;
  /** Jobs of this process between start and Agenda's save after the run, by id. */
  readonly #running = new Map<string, { done: Promise<void>; resolve: () => void }>();
  #sweepTimer: NodeJS.Timeout | null = null;
  #started = false;

  constructor(
    store: Store,
    private readonly options: JobRunnerOptions,
    private readonly logger: Logger,
  ) {
    this.#embedded = store.kind === 'embedded';
    const backend = store.agendaBackend();
    // Retries are handed over only by the dispatcher, which saves its position (a durable
    // commit on the same SQLite connection) only after the jobs of the events it passes: that
    // commit syncs them, so the hand-over need not sync on its own beside the API's writes.
    if (backend.repository instanceof EmbeddedJobRepository) backend.repository.deferInserts = true;
    this.#upkeep = backend.repository;
    this.#bodies = store.deliveryBodies;
    // Every retry waiting for lighter writes listens to it (concurrency of them at once).
    setMaxListeners(0, this.#stopping.signal);
    this.#gate = options.writeActivity
      ? new WriteGate(options.writeActivity, options.writeGate ?? RETRY_WRITE_GATE)
      : null;
    this.#agenda = new Agenda({
      backend,
      name: `folio-${process.pid}`,
      notificationChannel: new InMemoryNotificationChannel(),
      processEvery: options.pollMs,
      maxConcurrency: options.concurrency,
      defaultConcurrency: options.concurrency,
    });
    this.#agenda.on('error', (error: Error) => this.logger.error({ err: error }, 'agenda error'));
    // Emitted once Agenda has saved the job's state after a run.
    this.#agenda.on(`complete:${DELIVERY_JOB}`, (job: Job) => {
      const id = String(job.attrs._id);
      this.#running.get(id)?.resolve();
      this.#running.delete(id);
    });
  }

  /** True between start() and stop() (readiness). */
  get running(): boolean {
    return this.#started;
  }

  /** Delivery jobs by state, counted by the job store (the metrics' queue depth). */
  async deliveryJobs(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const overview = (await this.#agenda.getJobsOverview()).find((row) => row.name === DELIVERY_JOB);
    if (!overview) return counts;
    for (const state of ['queued', 'scheduled', 'running', 'completed', 'failed'] as const) {
      counts.set(state, overview[state]);
    }
    return counts;
  }

  /**
   * Agenda's lock on a running job, renewed (touched) every third of it while the job runs.
   * Each instance stamps it with its own clock, so it is not what keeps attempts single: the
   * delivery's attempt lock is (DeliveryService). On MongoDB it outlives the attempt lock (many
   * attempt time limits). On the embedded store one process runs every job and its attempt
   * locks live in memory, so a job locked at a crash is only a delay: its lock lasts one
   * attempt plus a poll and a second, and a restarted server takes the job over that soon.
   */
  get lockLifetimeMs(): number {
    if (this.options.lockLifetimeMs !== undefined) return this.options.lockLifetimeMs;
    const { pollMs, attemptTimeoutMs } = this.options;
    return this.#embedded ? pollMs + attemptTimeoutMs + 1_000 : attemptLockTtlMs(attemptTimeoutMs) + pollMs;
  }

  handleDeliveries(handler: DeliveryHandler): void {
    this.#agenda.define<DeliveryJob>(
      DELIVERY_JOB,
      async (job) => {
        let resolve = () => {};
        const done = new Promise<void>((r) => {
          resolve = r;
        });
        this.#running.set(String(job.attrs._id), { done, resolve });
        await this.#runDelivery(job, handler);
      },
      {
        concurrency: this.options.concurrency,
        lockLifetime: this.lockLifetimeMs,
        // Claimed (locked) but not yet running jobs wait in Agenda's memory (their bodies are
        // read only when they run); unbounded, a backlog of due retries would all be claimed at once (memory, and locks
        // running out while they wait). Agenda claims more only at each poll, so this is also
        // the most retries started per poll: 5 rounds of the concurrency (100 per second by
        // default) keep the runners fed.
        lockLimit: RETRY_ROUNDS_PER_POLL * this.options.concurrency,
      },
    );
  }

  async #runDelivery(job: Job<DeliveryJob>, handler: DeliveryHandler): Promise<void> {
    const data = job.attrs.data;
    let next: Date | null;
    const touch = setInterval(() => {
      job
        .touch()
        .catch((error: unknown) => this.logger.warn({ err: error }, 'delivery job lock renewal failed'));
    }, this.lockLifetimeMs / 3);
    touch.unref();
    try {
      // Writes go first (writeGate.ts): Agenda has claimed and started the job, but the attempt,
      // its record and its reschedule wait while the document writes are heavy.
      await this.#gate?.waitForLightWrites(this.#stopping.signal);
      if (this.#stopping.signal.aborted) {
        // Stopping: no attempt was made; the job stays due, so it runs after the restart.
        job.attrs.nextRunAt = new Date();
        return;
      }
      const body = data.body ?? (await this.#bodies.get(data.bodyKey));
      if (body === null) {
        // Only a MongoDB deployment down for longer than BODY_GRACE_MS past the retry gets here.
        this.logger.error(
          { deliveryId: data.deliveryId, bodyKey: data.bodyKey },
          'webhook delivery body no longer kept; the delivery is dropped',
        );
        return;
      }
      next = await handler({ ...data, body }, this.#shutdown.signal);
      // The body outlives this retry too (a later time only; no body bytes written).
      if (next && data.body === undefined) {
        await this.#bodies.keep(data.bodyKey, body, next.getTime() + BODY_GRACE_MS);
      }
    } catch (error) {
      this.logger.error({ err: error, deliveryId: data.deliveryId }, 'webhook delivery could not run');
      next = new Date(Date.now() + this.options.errorRetryMs);
    } finally {
      clearInterval(touch);
    }
    // Agenda cleared nextRunAt when the run began and saves the job when it ends: setting it
    // here is how a delivery schedules its next attempt, durably.
    if (next) job.attrs.nextRunAt = next;
  }

  async start(): Promise<void> {
    await this.#agenda.start();
    this.#started = true;
    this.#sweepTimer = setInterval(
      () => {
        this.sweep().catch((error: unknown) => this.logger.warn({ err: error }, 'delivery job sweep failed'));
      },
      Math.max(1_000, Math.floor(this.options.keepFinishedMs / 2)),
    );
    this.#sweepTimer.unref();
  }

  /**
   * The body is kept once per event (the first webhook's hand-over writes it, the others only
   * its time) before the job that names it is saved, so no job exists without its body.
   */
  async enqueueDelivery(task: DeliveryTask): Promise<void> {
    const { body, ...job } = task;
    await this.#bodies.keep(task.bodyKey, body, (task.runAt ?? Date.now()) + BODY_GRACE_MS);
    await this.#agenda
      .create<DeliveryJob>(DELIVERY_JOB, job)
      .unique({ 'data.dedupeKey': task.dedupeKey }, { insertOnly: true })
      .schedule(new Date(task.runAt ?? Date.now()))
      .save();
  }

  /** Remove delivery jobs that finished more than `keepFinishedMs` ago, in the store (MongoDB: one
   * server-side delete; embedded: bounded chunks, yielding between them), never loaded here. */
  async sweep(now = Date.now()): Promise<number> {
    const removed = await this.#upkeep.removeCompletedBefore(DELIVERY_JOB, now - this.options.keepFinishedMs);
    await this.#bodies.removeExpired(now);
    return removed;
  }

  async stop(): Promise<void> {
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    if (!this.#started) return;
    this.#started = false;
    this.#stopping.abort();
    await this.#agenda.stop();
    const saved = Promise.all([...this.#running.values()].map((run) => run.done));
    await within(saved, Math.min(STOP_GRACE_MS, this.options.attemptTimeoutMs));
    this.#shutdown.abort();
    await within(saved, STOP_WAIT_MS);
  }
}

/** Wait for `promise`, but no longer than `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([promise, timeout]);
  clearTimeout(timer);
}
