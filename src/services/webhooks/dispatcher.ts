/**
 * The webhook dispatcher: reads the store-wide change feed and enqueues one delivery job per
 * (event, matching webhook).
 *
 * - Position: the token of the last event handled is saved in the store (at most every
 *   `saveEveryMs`, and when it stops), and reading resumes just after it, so a committed write
 *   is never missed across restarts or crashes. Events after the last save are read again after
 *   a crash; their delivery ids are derived from (event, webhook) and the store keeps one job per
 *   id, so they are not delivered twice.
 * - Several instances (MongoDB): one dispatcher at a time holds the store's lease and reads the
 *   feed; the others wait to take over when it expires. During a hand-over two may briefly read
 *   the same events: the deterministic job ids settle it (one job per delivery).
 * - Position older than the retained history (`history_lost`, the dispatcher was down longer
 *   than `events.retentionMs`): logged at error level, and reading continues from now. Events
 *   committed in between are not delivered.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { BoundedCache } from '../../boundedCache.js';
import type { DeliveryQueue } from '../../jobs/webhookDelivery.js';
import type { ChangeEvent, ChangeSubscription, Store } from '../../store/port.js';
import { deliveryIdFor } from './deliveryIds.js';
import { eventOf } from './events.js';
import { deliveryBody } from './payload.js';

export const DISPATCHER_NAME = 'webhook-dispatcher';

export interface DispatcherOptions {
  /** How long the lease lasts without renewal; renewed every third of it. */
  leaseMs: number;
  /** Longest time between two saves of the position while events flow. */
  saveEveryMs: number;
}

/** Project names by id: names never change, and every event needs one. */
const PROJECT_CACHE_LIMIT = 10_000;

export class WebhookDispatcher {
  readonly holder = `${process.pid}-${randomUUID()}`;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #subscription: ChangeSubscription | null = null;
  #wake: (() => void) | null = null;
  readonly #projects = new BoundedCache<string>(PROJECT_CACHE_LIMIT);
  /** Set after `history_lost`/`invalid_token`: the saved position is useless, start from now. */
  #fromNow = false;
  #leading = false;

  constructor(
    private readonly store: Store,
    private readonly queue: DeliveryQueue,
    private readonly options: DispatcherOptions,
    private readonly logger: Logger,
  ) {}

  /** True while this instance holds the lease and reads the feed. */
  get leading(): boolean {
    return this.#leading;
  }

  /** True from start() until stop() (readiness); leading or standing by. */
  get running(): boolean {
    return this.#loop !== null && !this.#stopped;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#subscription?.close();
    this.#wake?.();
    await this.#loop;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        if (await this.store.consumers.acquire(DISPATCHER_NAME, this.holder, this.options.leaseMs)) {
          await this.#lead();
        } else {
          await this.#pause(this.options.leaseMs / 3);
        }
      } catch (error) {
        if (this.#stopped) break;
        this.logger.error({ err: error }, 'webhook dispatcher failed; retrying');
        await this.#pause(1_000);
      }
    }
  }

  /** Read the feed while holding the lease; returns when the lease is lost or on stop. */
  async #lead(): Promise<void> {
    const saved = this.#fromNow ? null : await this.store.consumers.position(DISPATCHER_NAME);
    const sub = this.store.changes.watchAll(saved ? { after: saved } : {});
    this.#subscription = sub;
    this.#leading = true;
    let lastToken: string | null = null;
    // 0: the first event is saved at once, so even a first run never restarts "from now".
    let savedAt = 0;
    let lostLease = false;
    const renew = setInterval(() => {
      this.store.consumers
        .acquire(DISPATCHER_NAME, this.holder, this.options.leaseMs)
        .then((held) => {
          if (!held) {
            lostLease = true;
            sub.close();
          }
        })
        .catch((error: unknown) =>
          this.logger.warn({ err: error }, 'webhook dispatcher lease renewal failed'),
        );
    }, this.options.leaseMs / 3);
    renew.unref();
    try {
      for await (const event of sub) {
        await this.#dispatch(event);
        lastToken = event.token;
        this.#fromNow = false;
        if (Date.now() - savedAt >= this.options.saveEveryMs) {
          if (!(await this.#save(lastToken))) {
            lostLease = true;
            break;
          }
          lastToken = null;
          savedAt = Date.now();
        }
      }
    } finally {
      clearInterval(renew);
      this.#subscription = null;
      this.#leading = false;
      sub.close();
      if (lastToken && !lostLease) await this.#save(lastToken);
    }
    this.#onEnd(sub);
    if (this.#stopped) await this.store.consumers.release(DISPATCHER_NAME, this.holder).catch(() => {});
    else if (lostLease) this.logger.info('webhook dispatcher lease lost; standing by');
  }

  #onEnd(sub: ChangeSubscription): void {
    switch (sub.endedBy) {
      case 'history_lost':
      case 'invalid_token':
        this.#fromNow = true;
        this.logger.error(
          { reason: sub.endedBy },
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
    return this.store.consumers.savePosition(DISPATCHER_NAME, this.holder, token);
  }

  /** Enqueue the event for every active webhook of its collection that receives its type. */
  async #dispatch(event: ChangeEvent): Promise<void> {
    const name = eventOf(event.type);
    const webhooks = await this.store.webhooks.listActive(event.scope, event.collection, name);
    if (webhooks.length === 0) return;
    const body = deliveryBody({
      event: name,
      project: await this.#projectName(event.scope.projectId),
      collection: event.collection,
      documentId: event.documentId,
      document: event.document,
      timestamp: event.timestamp,
    });
    const eventMs = Date.parse(event.timestamp);
    for (const webhook of webhooks) {
      const deliveryId = deliveryIdFor(event.token, webhook.id, eventMs);
      await this.queue.enqueueDelivery({
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
        enqueuedAt: Date.now(),
      });
    }
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
