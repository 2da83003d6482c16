/**
 * Delivering webhook events: one signed attempt at a time, the history of attempts, retries per
 * plan, and the disabling rule. A delivery runs as a job (see src/jobs/); its record in the
 * store is the truth about which attempt comes next, so a job re-run after a crash neither
 * repeats a finished delivery nor retries early.
 */
import { randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import { isoNow } from '../../ids.js';
import { attemptLockTtlMs } from '../../store/attemptLock.js';
import type { DeliveryTask } from '../../store/deliveryJob.js';
import type {
  DataScope,
  DeliveryAttempt,
  DeliveryRecord,
  Plan,
  Store,
  WebhookRecord,
} from '../../store/port.js';
import { hasRetryLeft, retryDelayMs } from './retryPolicy.js';
import type { SecretVault } from './secretVault.js';
import type { SendOutcome, WebhookSender } from './sender.js';
import { signature } from './signing.js';

/** Headers that carry the event; the body is signed as sent. */
export function deliveryHeaders(
  event: string,
  deliveryId: string,
  timestamp: string,
  body: string,
  secret: string,
): Record<string, string> {
  return {
    'x-service-event': event,
    'x-service-signature': signature(body, secret),
    'x-service-delivery-id': deliveryId,
    'x-service-timestamp': timestamp,
  };
}

/** A not-yet-due attempt found when a job runs early (re-run after a crash): tolerance, ms. */
const EARLY_TOLERANCE_MS = 50;

/** Collections whose webhook lists are kept (each a few records): refilled when exceeded. */
const LIST_CACHE_LIMIT = 10_000;

interface CachedList {
  readAt: number;
  /** The collection's active webhooks, oldest first. */
  active: WebhookRecord[];
}

export class DeliveryService {
  #attemptListener: ((status: 'succeeded' | 'pending' | 'failed') => void) | null = null;
  /**
   * Active webhooks per collection, read at most every `webhooks.listCacheMs`: every event and
   * attempt needs them. A change made through this process forgets its collection's entry at
   * once (forgetWebhooks); one made by another instance is seen within `listCacheMs`.
   */
  readonly #lists = new LRUCache<string, CachedList>({ max: LIST_CACHE_LIMIT });
  /** Opened secrets by webhook id and sealed form (#secretOf); a few per webhook at most. */
  readonly #secrets = new LRUCache<string, string>({ max: LIST_CACHE_LIMIT });
  /** Attempt lock holders are this plus a counter: one holder per attempt, even in one process. */
  readonly #holderPrefix = `${process.pid}-${randomUUID()}`;
  #attempts = 0;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly vault: SecretVault,
    private readonly sender: WebhookSender,
    private readonly logger: Logger,
  ) {}

  /** POST the body to the webhook's URL, signed with its current secret. */
  async attempt(
    webhook: WebhookRecord,
    delivery: { id: string; event: string; timestamp: string; body: string },
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    const secret = await this.#secretOf(webhook);
    const headers = deliveryHeaders(delivery.event, delivery.id, delivery.timestamp, delivery.body, secret);
    return this.sender.send(webhook.url, delivery.body, headers, {
      timeoutMs: this.config.webhooks.timeoutMs,
      maxResponseBytes: this.config.webhooks.maxResponseBytes,
      signal,
    });
  }

  /**
   * The webhook's secret, opened once per sealed form rather than per attempt (an AES-GCM open
   * per delivery was a cost per event and webhook). Keyed by the sealed form itself: a rotated
   * secret is a new sealed form, so it is opened afresh and the old entry is never used again.
   */
  async #secretOf(webhook: WebhookRecord): Promise<string> {
    const key = `${webhook.id}\0${webhook.sealedSecret}`;
    const known = this.#secrets.get(key);
    if (known !== undefined) return known;
    const secret = (await this.vault.sealer()).unseal(webhook.sealedSecret, webhook.id);
    this.#secrets.set(key, secret);
    return secret;
  }

  /** Active webhooks of the collection that receive `event`, oldest first (cached, see #lists). */
  async activeWebhooks(scope: DataScope, collection: string, event: string): Promise<WebhookRecord[]> {
    const list = await this.#activeList(scope, collection);
    return list.filter((webhook) => webhook.events.includes(event));
  }

  /** A webhook of the collection changed (registered, updated, deleted, disabled): read it again. */
  forgetWebhooks(scope: DataScope, collection: string): void {
    this.#lists.delete(listKey(scope, collection));
  }

  async #activeList(scope: DataScope, collection: string): Promise<WebhookRecord[]> {
    const key = listKey(scope, collection);
    const cached = this.#lists.get(key);
    const now = Date.now();
    if (cached && now - cached.readAt < this.config.webhooks.listCacheMs) return cached.active;
    const all = await this.store.webhooks.list(scope, collection);
    const active = all.filter((webhook) => webhook.status === 'active');
    this.#lists.set(key, { readAt: now, active });
    return active;
  }

  /** The webhook of a task: from the cached list when active, else from the store. */
  async #webhookOf(task: DeliveryTask): Promise<WebhookRecord | null> {
    const scope = { projectId: task.projectId, env: task.env };
    const active = (await this.#activeList(scope, task.collection)).find((w) => w.id === task.webhookId);
    return active ?? this.store.webhooks.get(scope, task.collection, task.webhookId);
  }

  /** Told the outcome of every attempt that reached the receiver (metrics). */
  onAttempt(listener: (status: 'succeeded' | 'pending' | 'failed') => void): void {
    this.#attemptListener = listener;
  }

  /**
   * One step of a delivery: its first attempt (the dispatcher) or a retry (the job handler).
   * Runs under the delivery's attempt lock, renewed while the attempt runs, so two runs of one
   * delivery (a replayed event, a job whose Agenda lock expired, two instances) never attempt
   * it at once; only the lock's holder records the attempt. A run that finds the lock taken
   * answers a time after which the other attempt must have ended, and records nothing.
   */
  async run(task: DeliveryTask, signal: AbortSignal): Promise<Date | null> {
    const holder = `${this.#holderPrefix}-${++this.#attempts}`;
    const ttlMs = attemptLockTtlMs(this.config.webhooks.timeoutMs);
    const locks = this.store.attemptLocks;
    if (!(await locks.acquire(task.deliveryId, holder, ttlMs))) {
      return new Date(Date.now() + this.config.webhooks.timeoutMs + EARLY_TOLERANCE_MS);
    }
    let lost = false;
    const renew = setInterval(() => {
      locks.acquire(task.deliveryId, holder, ttlMs).then(
        (held) => {
          if (!held) lost = true;
        },
        (error: unknown) => this.logger.warn({ err: error }, 'attempt lock renewal failed'),
      );
    }, ttlMs / 3);
    renew.unref();
    // Before the record is written: still ours (renewed once more), or the attempt is not ours to record.
    const stillHeld = async () => !lost && (await locks.acquire(task.deliveryId, holder, ttlMs));
    try {
      return await this.#runLocked(task, signal, stillHeld);
    } finally {
      clearInterval(renew);
      await locks.release(task.deliveryId, holder).catch(() => {});
    }
  }

  async #runLocked(
    task: DeliveryTask,
    signal: AbortSignal,
    stillHeld: () => Promise<boolean>,
  ): Promise<Date | null> {
    const now = Date.now();
    const existing = await this.store.deliveries.get(task.deliveryId);
    if (existing && existing.status !== 'pending') return null;
    const last = existing?.attempts.at(-1);
    if (last?.nextRetryAt && Date.parse(last.nextRetryAt) > now + EARLY_TOLERANCE_MS) {
      return new Date(last.nextRetryAt);
    }
    const webhook = await this.#webhookOf(task);
    // Deleted: its history went with it; nothing to send or record.
    if (!webhook) return null;
    const record = existing ?? this.#newRecord(task);
    if (webhook.status !== 'active') {
      if (await stillHeld()) await this.#save({ ...record, status: 'cancelled', updatedAt: isoNow() });
      return null;
    }
    const outcome = await this.attempt(
      webhook,
      { id: task.deliveryId, event: task.event, timestamp: task.timestamp, body: task.body },
      signal,
    );
    // Shutdown cut the attempt short: it says nothing about the receiver. Run it again later.
    if (outcome.aborted) return new Date();

    const number = record.attempts.length + 1;
    const at = isoNow(now);
    const retryAt =
      !outcome.ok && hasRetryLeft(number, await this.#retriesFor(task.projectId))
        ? new Date(Date.now() + retryDelayMs(number, this.config.webhooks.backoffBaseMs))
        : null;
    const attempt: DeliveryAttempt = {
      number,
      at,
      statusCode: outcome.statusCode,
      error: outcome.error,
      durationMs: outcome.durationMs,
      nextRetryAt: retryAt ? retryAt.toISOString() : null,
    };
    const status = outcome.ok ? 'succeeded' : retryAt ? 'pending' : 'failed';
    if (!(await stillHeld())) {
      this.logger.warn({ deliveryId: task.deliveryId }, 'attempt lock lost during the attempt; not recorded');
      return null;
    }
    await this.#save({ ...record, status, attempts: [...record.attempts, attempt], updatedAt: isoNow() });
    this.#attemptListener?.(status);

    if (outcome.ok) {
      await this.store.webhooks.recordSuccess(webhook.id);
    } else if (status === 'failed') {
      const after = await this.store.webhooks.recordFailure(
        webhook.id,
        this.config.webhooks.disableAfterFailures,
        isoNow(),
      );
      if (after?.status === 'disabled') {
        this.forgetWebhooks(webhook.scope, webhook.collection);
      }
      if (after?.status === 'disabled' && webhook.status === 'active') {
        this.logger.warn(
          { webhookId: webhook.id, failures: after.consecutiveFailures },
          'webhook disabled after failed deliveries in a row',
        );
      }
    }
    return retryAt;
  }

  /** The webhook's history, newest first. */
  history(webhookId: string): Promise<DeliveryRecord[]> {
    return this.store.deliveries.list(webhookId, this.config.webhooks.keepDeliveries);
  }

  /** Keep the record and prune the webhook's history to its configured length. */
  save(delivery: DeliveryRecord): Promise<void> {
    return this.#save(delivery);
  }

  #save(delivery: DeliveryRecord): Promise<void> {
    return this.store.deliveries.save(delivery, this.config.webhooks.keepDeliveries);
  }

  #newRecord(task: DeliveryTask): DeliveryRecord {
    const now = isoNow();
    return {
      id: task.deliveryId,
      webhookId: task.webhookId,
      event: task.event,
      documentId: task.documentId,
      eventTimestamp: task.timestamp,
      status: 'pending',
      attempts: [],
      createdAt: now,
      updatedAt: now,
    };
  }

  /** The plan's retries, read at each attempt: a plan change applies to deliveries under way. */
  async #retriesFor(projectId: string): Promise<number> {
    const project = await this.store.accounts.getProject(projectId);
    const account = project ? await this.store.accounts.getAccount(project.accountId) : null;
    const plan: Plan = account?.plan ?? 'free';
    return this.config.plans[plan].webhookRetries;
  }
}

function listKey(scope: DataScope, collection: string): string {
  return `${scope.projectId}\0${scope.env}\0${collection}`;
}
