/**
 * The webhook dispatcher: the change feed is the outbox. It reads the feed (its partition of
 * it, see partitions.ts) and makes each delivery's first attempt itself, over the sender's
 * keep-alive client, at most `concurrency` at a time; a delivery that needs another attempt is
 * handed to Agenda (the retry scheduler) as a job. No job is written for a delivery that
 * succeeds at once, and a write never waits for any of this (the feed is read after commit).
 *
 * - Position: the saved position passes an event only once each of its deliveries was
 *   attempted and recorded, or handed to Agenda; events are tracked in feed order and the
 *   position is the last event of the finished prefix (saved at most every `saveEveryMs`, and
 *   when it stops). With no event open it is the feed's checkpoint, saved at each lease renewal
 *   (a third of the lease): on a busy deployment where this Folio is quiet, the position keeps
 *   up with the feed and does not fall out of the oplog window before a hand-over. After a crash, events after it are read again; their delivery ids are
 *   derived from (event, webhook), and a delivery already recorded (succeeded, failed, or
 *   pending a retry) is not attempted again (see DeliveryService.run), so at-least-once holds
 *   and a replay sends only what had not been recorded.
 * - Several instances: one dispatcher per partition lease reads at a time; the others stand by
 *   to take over when it expires. During a hand-over two may briefly read the same events: the
 *   attempt lock of each delivery (DeliveryService) keeps it to one attempt at a time.
 * - Position older than the retained history (`history_lost`, the dispatcher was down longer
 *   than `events.retentionMs`): logged at error level, and reading continues from now. Events
 *   committed in between are not delivered.
 * - Stop: attempts in flight are aborted; their events stay after the saved position, so they
 *   are attempted again after a restart.
 */
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { DeliveryQueue } from '../../jobs/webhookDelivery.js';
import type { DeliveryTask } from '../../store/deliveryJob.js';
import type { ChangeEvent, ChangeSubscription, Store } from '../../store/port.js';
import type { DeliveryService } from './deliveries.js';
import { bodyKeyFor, deliveryIdFor } from './deliveryIds.js';
import { eventOf } from './events.js';
import { FinishedPrefix, type OpenEvent } from './finishedPrefix.js';
import { acquireDelayMs, leaseName, type Partition, partitionOf, WHOLE_FEED } from './partitions.js';
import { deliveryBody } from './payload.js';

export { DISPATCHER_NAME } from './partitions.js';

export interface DispatcherOptions {
  /** How long the lease lasts without renewal; renewed every third of it. */
  leaseMs: number;
  /** Longest time between two saves of the position while events flow. */
  saveEveryMs: number;
  /** First attempts in flight at once. */
  concurrency: number;
  /** The part of the feed this dispatcher reads (default: all of it). */
  partition?: Partition;
  /** Events read but unfinished past which reading pauses (default MAX_OPEN_EVENTS). */
  maxOpenEvents?: number;
  /** Leases held by this process's dispatchers, shared by them, and the fair share per instance. */
  held?: { count: number; share: number };
}

/** Project names by id: names never change, and every event needs one. */
const PROJECT_CACHE_LIMIT = 10_000;
/**
 * Events read but not yet finished (they wait behind a slow first one): past this many, reading
 * pauses until the oldest finishes, so memory stays bounded whatever the receivers do.
 */
const MAX_OPEN_EVENTS = 10_000;

/** Leases held over the fair share for this many lease periods are given up (rebalancing). */
const REBALANCE_AFTER_LEASES = 5;

/** How long stop() lets first attempts in flight finish before aborting them. */
const STOP_GRACE_MS = 2_000;

/** One lead (a term holding the lease): what its steps share. */
interface Term {
  readonly sub: ChangeSubscription;
  readonly events: FinishedPrefix;
  lostLease: boolean;
  /** A delivery neither recorded nor handed to Agenda: the lead ends with it. */
  failure: unknown;
}

export class WebhookDispatcher {
  readonly holder = `${process.pid}-${randomUUID()}`;
  readonly partition: Partition;
  readonly #name: string;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #subscription: ChangeSubscription | null = null;
  #wake: (() => void) | null = null;
  readonly #projects = new LRUCache<string, string>({ max: PROJECT_CACHE_LIMIT });
  /** Set after `history_lost`/`invalid_token`: the saved position is useless, start from now. */
  #fromNow = false;
  #leading = false;
  readonly #abort = new AbortController();
  /** Resolved whenever a slot frees or an event finishes. */
  #progress: (() => void) | null = null;
  #inFlight = 0;
  /** This dispatcher's lease is counted in `options.held` (taking or holding it). */
  #counted = false;
  /** Set when this dispatcher gave its lease up for another instance (over the fair share). */
  #yielding = false;

  constructor(
    private readonly store: Store,
    private readonly deliveries: DeliveryService,
    private readonly queue: DeliveryQueue,
    private readonly options: DispatcherOptions,
    private readonly logger: Logger,
  ) {
    this.partition = options.partition ?? WHOLE_FEED;
    this.#name = leaseName(this.partition);
  }

  /** True while this instance holds the lease and reads the feed. */
  get leading(): boolean {
    return this.#leading;
  }

  /** True from start() until stop() (readiness); leading or standing by. */
  get running(): boolean {
    return this.#loop !== null && !this.#stopped;
  }

  /** The lease and position name of this dispatcher's partition. */
  get name(): string {
    return this.#name;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscription?.close();
    this.#wake?.();
    this.#progress?.();
    // Attempts in flight get a short grace to finish on their own (one cut short after the
    // receiver took it would be sent again after the restart); the rest are aborted.
    const timer = setTimeout(() => this.#abort.abort(), STOP_GRACE_MS);
    await this.#loop;
    clearTimeout(timer);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        const held = this.options.held;
        const delay = held ? acquireDelayMs(held.count, held.share, this.options.leaseMs) : 0;
        if (delay > 0) await this.#pause(delay);
        if (this.#stopped) break;
        // Counted before the (asynchronous) take, so that this process's other partitions
        // starting at the same moment see it and leave their leases to other instances.
        if (held) held.count += 1;
        this.#counted = true;
        let taken = false;
        try {
          taken = await this.store.consumers.acquire(this.#name, this.holder, this.options.leaseMs);
          if (taken) await this.#lead();
        } finally {
          this.#uncount();
        }
        if (!taken) {
          await this.#pause(this.options.leaseMs / 3);
        }
      } catch (error) {
        if (this.#stopped) break;
        this.logger.error({ err: error, partition: this.#name }, 'webhook dispatcher failed; retrying');
        await this.#pause(1_000);
      }
    }
  }

  /** Read the feed while holding the lease; returns when the lease is lost, on stop or failure. */
  async #lead(): Promise<void> {
    const saved = this.#fromNow ? null : await this.store.consumers.position(this.#name);
    // Reading from now (no position yet, or history lost): until a position is saved, a stop
    // would restart from now again and skip what was read. So the first event's deliveries go
    // to Agenda (durably, at once) rather than being attempted, and its token is saved at once:
    // an anchor every later event is after.
    let anchoring = saved === null;
    const sub = this.store.changes.watchAll(saved ? { after: saved } : {});
    this.#subscription = sub;
    this.#leading = true;
    const events = new FinishedPrefix((token) => this.#save(token));
    const term: Term = { sub, events, lostLease: false, failure: null };
    this.#yielding = false;
    const renew = this.#keepLease(term);
    try {
      for await (const event of sub) {
        const entry = events.read(event.token);
        if (partitionOf(event.scope, event.collection, this.partition.count) === this.partition.index) {
          await this.#startDeliveries(term, entry, await this.#tasksOf(event), anchoring);
        }
        if (term.failure) throw term.failure;
        if (this.#stopped) break;
        this.#fromNow = false;
        if (anchoring) {
          while (entry.remaining > 0 && !term.failure) await this.#waitForProgress();
          if (term.failure) throw term.failure;
          anchoring = false;
        }
        events.advance();
        if (Date.now() - events.savedAt >= this.options.saveEveryMs && !(await events.save())) {
          term.lostLease = true;
          break;
        }
      }
      // The feed ended (stop, lost lease, store closed): let attempts under way finish (stop()
      // aborted them already, so this is short), then save what finished.
      while (this.#inFlight > 0) await this.#waitForProgress();
      if (term.failure) throw term.failure;
    } finally {
      clearInterval(renew);
      this.#subscription = null;
      this.#leading = false;
      sub.close();
      while (this.#inFlight > 0) await this.#waitForProgress();
      events.advance();
      if (!term.lostLease) await events.save().catch(() => false);
    }
    await this.#endLead(term);
  }

  /**
   * Starts the event's deliveries, at most `concurrency` in flight and reading paused past
   * `maxOpenEvents`; while anchoring they go to Agenda instead of being attempted.
   */
  async #startDeliveries(
    term: Term,
    entry: OpenEvent,
    tasks: DeliveryTask[],
    anchoring: boolean,
  ): Promise<void> {
    for (const task of tasks) {
      while (
        this.#inFlight >= this.options.concurrency ||
        term.events.size > (this.options.maxOpenEvents ?? MAX_OPEN_EVENTS)
      ) {
        if (this.#stopped || term.failure) return;
        await this.#waitForProgress();
        term.events.advance();
      }
      if (this.#stopped || term.failure) return;
      entry.remaining += 1;
      this.#inFlight += 1;
      (anchoring ? this.queue.enqueueDelivery(task).then(() => 'done' as const) : this.#deliver(task))
        .then(
          (outcome) => {
            if (outcome === 'aborted') entry.abandoned = true;
            entry.remaining -= 1;
          },
          (error: unknown) => {
            // Neither recorded nor handed to Agenda: the position stays before this event.
            entry.abandoned = true;
            term.failure ??= error;
          },
        )
        .finally(() => {
          this.#inFlight -= 1;
          this.#progress?.();
        });
    }
  }

  /**
   * Renews the lease every third of it, saving what finished meanwhile; closes the feed when
   * the lease is lost or given up for the fair share.
   */
  #keepLease(term: Term): NodeJS.Timeout {
    const leadingSince = Date.now();
    const renew = setInterval(() => {
      if (this.#shouldYield(leadingSince)) {
        this.#yielding = true;
        term.sub.close();
        return;
      }
      // Taken here, in a timer: an event taken from the feed has been read into `events`.
      const quiet = term.events.quietPoint(term.sub.checkpoint?.() ?? null);
      this.store.consumers
        .acquire(this.#name, this.holder, this.options.leaseMs)
        .then(async (held) => {
          if (!held) {
            term.lostLease = true;
            term.sub.close();
            return;
          }
          // Deliveries finish after their event was read: with no new event to trigger a save,
          // the position is saved here, so it never lags behind the retained history; with
          // nothing open, the feed's checkpoint moves it on while the feed is quiet.
          term.events.advance();
          term.events.checkpoint(quiet);
          if (!(await term.events.save())) {
            term.lostLease = true;
            term.sub.close();
          }
        })
        .catch((error: unknown) =>
          this.logger.warn({ err: error }, 'webhook dispatcher lease renewal failed'),
        );
    }, this.options.leaseMs / 3);
    renew.unref();
    return renew;
  }

  /** After a lead: why the feed ended, and the lease given back when stopping or yielding. */
  async #endLead(term: Term): Promise<void> {
    this.#onEnd(term.sub);
    if (this.#stopped || this.#yielding) {
      await this.store.consumers.release(this.#name, this.holder).catch(() => {});
    }
    if (this.#yielding)
      this.logger.info({ partition: this.#name }, 'webhook partition left to another instance (fair share)');
    else if (term.lostLease)
      this.logger.info({ partition: this.#name }, 'webhook dispatcher lease lost; standing by');
  }

  #uncount(): void {
    if (this.#counted && this.options.held) this.options.held.count -= 1;
    this.#counted = false;
  }

  /**
   * Over the fair share for a while: give this lease up, so that an instance started later (or
   * under its share) can take it during the pause that follows (acquireDelayMs). With no other
   * instance, this one takes it back after that pause.
   */
  #shouldYield(leadingSince: number): boolean {
    const held = this.options.held;
    if (!held || held.count <= held.share) return false;
    if (Date.now() - leadingSince < REBALANCE_AFTER_LEASES * this.options.leaseMs) return false;
    this.#uncount();
    return true;
  }

  #waitForProgress(): Promise<void> {
    return new Promise((resolve) => {
      this.#progress = () => {
        this.#progress = null;
        resolve();
      };
    });
  }

  /**
   * First attempt of one delivery; hands it to Agenda when another attempt is due. 'aborted':
   * stop() cut it short and nothing was recorded or handed over.
   */
  async #deliver(task: DeliveryTask): Promise<'done' | 'aborted'> {
    const signal = this.#abort.signal;
    const next = await this.deliveries.run(task, signal);
    if (next === null) return 'done';
    if (signal.aborted && next.getTime() <= Date.now()) return 'aborted';
    await this.queue.enqueueDelivery({ ...task, runAt: next.getTime() });
    return 'done';
  }

  #onEnd(sub: ChangeSubscription): void {
    switch (sub.endedBy) {
      case 'history_lost':
      case 'invalid_token':
        this.#fromNow = true;
        this.logger.error(
          { reason: sub.endedBy, partition: this.#name },
          'WEBHOOK EVENTS LOST: the dispatcher position is no longer in the change history ' +
            '(down longer than events.retentionMs); continuing from now. Events committed meanwhile are not delivered.',
        );
        return;
      case 'store_closed':
        this.#stopped = true;
        return;
      default:
        // overflow, invalidated or closed: the loop reads again from the saved position.
        return;
    }
  }

  async #save(token: string): Promise<boolean> {
    return this.store.consumers.savePosition(this.#name, this.holder, token);
  }

  /** One delivery per active webhook of the event's collection that receives its type; one body. */
  async #tasksOf(event: ChangeEvent): Promise<DeliveryTask[]> {
    const name = eventOf(event.type);
    const webhooks = await this.deliveries.activeWebhooks(event.scope, event.collection, name);
    if (webhooks.length === 0) return [];
    const body = deliveryBody({
      event: name,
      project: await this.#projectName(event.scope.projectId),
      collection: event.collection,
      documentId: event.documentId,
      document: event.document,
      timestamp: event.timestamp,
    });
    const eventMs = Date.parse(event.timestamp);
    const bodyKey = bodyKeyFor(event.token);
    return webhooks.map((webhook) => {
      const deliveryId = deliveryIdFor(event.token, webhook.id, eventMs);
      return {
        dedupeKey: deliveryId,
        deliveryId,
        webhookId: webhook.id,
        projectId: event.scope.projectId,
        env: event.scope.env,
        collection: event.collection,
        event: name,
        documentId: event.documentId,
        timestamp: event.timestamp,
        body,
        bodyKey,
        enqueuedAt: Date.now(),
      };
    });
  }

  async #projectName(projectId: string): Promise<string> {
    const known = this.#projects.get(projectId);
    if (known !== undefined) return known;
    const project = await this.store.accounts.getProject(projectId);
    const name = project?.name ?? projectId;
    this.#projects.set(projectId, name);
    return name;
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
