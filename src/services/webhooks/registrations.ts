/**
 * Webhook registrations of a collection: register (the only answer that shows the secret, with
 * rotate-secret), list, read with recent deliveries, update, delete, and the test delivery.
 */
import { z } from 'zod';
import type { Config } from '../../config/schema.js';
import { badRequest, notFound, planLimitExceeded } from '../../errors.js';
import { isoNow, newId } from '../../ids.js';
import type { DeliveryRecord, Store, WebhookChanges, WebhookRecord } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import type { DeliveryService } from './deliveries.js';
import { DOCUMENT_EVENTS, TEST_EVENT } from './events.js';
import { deliveryBody } from './payload.js';
import type { SecretVault } from './secretVault.js';
import { generateSecret } from './signing.js';
import { assertResolvesPublic, type HostLookup, systemLookup, TargetRefusedError } from './targets.js';

const MAX_URL_LENGTH = 2048;

const urlField = z.string().trim().min(1).max(MAX_URL_LENGTH);
const eventsField = z
  .array(z.enum(DOCUMENT_EVENTS))
  .min(1)
  .max(DOCUMENT_EVENTS.length * 4)
  .transform((events) => [...new Set(events)]);
const descriptionField = z.string().max(500);

export const registerWebhookSchema = z.strictObject({
  url: urlField,
  events: eventsField,
  description: descriptionField.default(''),
});

export const updateWebhookSchema = z
  .strictObject({
    url: urlField.optional(),
    events: eventsField.optional(),
    description: descriptionField.optional(),
    status: z.enum(['active', 'disabled']).optional(),
  })
  .refine((v) => Object.values(v).some((field) => field !== undefined), 'send at least one field to change');

export type RegisterWebhookInput = z.infer<typeof registerWebhookSchema>;
export type UpdateWebhookInput = z.infer<typeof updateWebhookSchema>;

/** The webhook as the API shows it: never the secret, sealed or not. */
export function publicWebhook(webhook: WebhookRecord, project: string) {
  return {
    id: webhook.id,
    project,
    env: webhook.scope.env,
    collection: webhook.collection,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    status: webhook.status,
    consecutiveFailures: webhook.consecutiveFailures,
    createdAt: webhook.createdAt,
    updatedAt: webhook.updatedAt,
  };
}

export class WebhookService {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly vault: SecretVault,
    private readonly deliveries: DeliveryService,
    /** How host names resolve at registration: the system resolver, except in tests. */
    private readonly lookup: HostLookup = systemLookup,
  ) {}

  async register(
    ctx: KeyContext,
    collection: string,
    input: RegisterWebhookInput,
  ): Promise<{ webhook: WebhookRecord; secret: string }> {
    const max = ctx.limits.maxWebhooks;
    const full = () => planLimitExceeded('webhooks per collection', max, ctx.plan);
    // Checked first so a full collection answers before the target's look-up; the create below
    // checks again, atomically, for registrations racing this one.
    if ((await this.store.webhooks.count(ctx.scope, collection)) >= max) throw full();
    const url = await this.#checkedUrl(input.url);
    const id = newId('wh');
    const secret = generateSecret();
    const now = isoNow();
    const webhook: WebhookRecord = {
      id,
      scope: ctx.scope,
      collection,
      url,
      events: input.events,
      description: input.description,
      status: 'active',
      sealedSecret: (await this.vault.sealer()).seal(secret, id),
      consecutiveFailures: 0,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await this.store.webhooks.create(webhook, max))) throw full();
    this.deliveries.forgetWebhooks(ctx.scope, collection);
    return { webhook, secret };
  }

  list(ctx: KeyContext, collection: string): Promise<WebhookRecord[]> {
    return this.store.webhooks.list(ctx.scope, collection);
  }

  async get(ctx: KeyContext, collection: string, id: string): Promise<WebhookRecord> {
    const webhook = await this.store.webhooks.get(ctx.scope, collection, id);
    if (!webhook) throw notFound('Webhook');
    return webhook;
  }

  async getWithDeliveries(
    ctx: KeyContext,
    collection: string,
    id: string,
  ): Promise<{ webhook: WebhookRecord; deliveries: DeliveryRecord[] }> {
    const webhook = await this.get(ctx, collection, id);
    return { webhook, deliveries: await this.deliveries.history(webhook.id) };
  }

  async update(
    ctx: KeyContext,
    collection: string,
    id: string,
    input: UpdateWebhookInput,
  ): Promise<WebhookRecord> {
    const current = await this.get(ctx, collection, id);
    const changes: WebhookChanges = { updatedAt: isoNow() };
    if (input.url !== undefined) changes.url = await this.#checkedUrl(input.url);
    if (input.events !== undefined) changes.events = input.events;
    if (input.description !== undefined) changes.description = input.description;
    if (input.status !== undefined) {
      changes.status = input.status;
      // Re-enabling starts the count of failures in a row afresh.
      if (input.status === 'active' && current.status !== 'active') changes.consecutiveFailures = 0;
    }
    const updated = await this.store.webhooks.update(ctx.scope, collection, id, changes);
    this.deliveries.forgetWebhooks(ctx.scope, collection);
    if (!updated) throw notFound('Webhook');
    return updated;
  }

  async remove(ctx: KeyContext, collection: string, id: string): Promise<void> {
    const deleted = await this.store.webhooks.delete(ctx.scope, collection, id);
    this.deliveries.forgetWebhooks(ctx.scope, collection);
    if (!deleted) throw notFound('Webhook');
  }

  /** A new secret; the old one stops signing at once (retries under way sign with the new one). */
  async rotateSecret(
    ctx: KeyContext,
    collection: string,
    id: string,
  ): Promise<{ webhook: WebhookRecord; secret: string }> {
    await this.get(ctx, collection, id);
    const secret = generateSecret();
    const sealedSecret = (await this.vault.sealer()).seal(secret, id);
    const webhook = await this.store.webhooks.update(ctx.scope, collection, id, {
      sealedSecret,
      updatedAt: isoNow(),
    });
    this.deliveries.forgetWebhooks(ctx.scope, collection);
    if (!webhook) throw notFound('Webhook');
    return { webhook, secret };
  }

  /**
   * One synchronous attempt of a `webhook.test` event, whatever the webhook's status; recorded
   * in the history, never retried, and never counted towards disabling.
   */
  async test(ctx: KeyContext, collection: string, id: string): Promise<DeliveryRecord> {
    const webhook = await this.get(ctx, collection, id);
    const deliveryId = newId('dlv');
    const timestamp = isoNow();
    const body = deliveryBody({
      event: TEST_EVENT,
      project: ctx.project.name,
      collection,
      documentId: null,
      document: {},
      timestamp,
    });
    const outcome = await this.deliveries.attempt(webhook, {
      id: deliveryId,
      event: TEST_EVENT,
      timestamp,
      body,
    });
    const at = isoNow();
    const delivery: DeliveryRecord = {
      id: deliveryId,
      webhookId: webhook.id,
      event: TEST_EVENT,
      documentId: null,
      eventTimestamp: timestamp,
      status: outcome.ok ? 'succeeded' : 'failed',
      attempts: [
        {
          number: 1,
          at: timestamp,
          statusCode: outcome.statusCode,
          error: outcome.error,
          durationMs: outcome.durationMs,
          nextRetryAt: null,
        },
      ],
      createdAt: timestamp,
      updatedAt: at,
    };
    await this.deliveries.save(delivery);
    return delivery;
  }

  /** An http(s) URL without credentials, whose host may be reached (targets.ts). */
  async #checkedUrl(raw: string): Promise<string> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw badRequest('url: not a valid absolute URL.', { field: 'url' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw badRequest('url: only http and https URLs are allowed.', { field: 'url' });
    }
    if (url.username || url.password) {
      throw badRequest('url: credentials in the URL are not allowed; check the signature instead.', {
        field: 'url',
      });
    }
    if (!this.config.webhooks.allowPrivateTargets) {
      try {
        await assertResolvesPublic(url, this.lookup);
      } catch (error) {
        if (error instanceof TargetRefusedError)
          throw badRequest(
            `url: ${error.message} (FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true allows such targets).`,
            { field: 'url' },
          );
        throw error;
      }
    }
    return url.href;
  }
}
