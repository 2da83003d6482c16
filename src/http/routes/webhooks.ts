/**
 * Webhooks of a collection under `/{ns}/{collection}/_webhooks`. Registered before the document
 * routes, so `_webhooks` is never read as a document id (client ids cannot start with `_`).
 */
import {
  publicWebhook,
  registerWebhookSchema,
  updateWebhookSchema,
} from '../../services/webhooks/registrations.js';
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';
import { parseBody } from './parseBody.js';

const BASE = '/:ns/:collection/_webhooks';

/** The caller, collection and webhook id a `.../_webhooks/{id}` route addresses. */
function webhookAt(ctx: Ctx) {
  return [keyOf(ctx), param(ctx, 'collection'), param(ctx, 'id')] as const;
}

export function registerWebhookRoutes(router: FolioRouter): void {
  const body = jsonBody([JSON_TYPE], 16 * 1024);

  router.post(BASE, body, async (ctx) => {
    const key = keyOf(ctx);
    const input = parseBody(registerWebhookSchema, ctx.request.body);
    const { webhook, secret } = await ctx.services.webhooks.register(key, param(ctx, 'collection'), input);
    ctx.status = 201;
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/_webhooks/${webhook.id}`);
    ctx.body = { ...publicWebhook(webhook, key.project.name), secret };
  });

  router.get(BASE, async (ctx) => {
    const key = keyOf(ctx);
    const webhooks = await ctx.services.webhooks.list(key, param(ctx, 'collection'));
    ctx.body = { webhooks: webhooks.map((w) => publicWebhook(w, key.project.name)) };
  });

  router.get(`${BASE}/:id`, async (ctx) => {
    const { webhook, deliveries } = await ctx.services.webhooks.getWithDeliveries(...webhookAt(ctx));
    ctx.body = { ...publicWebhook(webhook, keyOf(ctx).project.name), deliveries };
  });

  router.patch(`${BASE}/:id`, body, async (ctx) => {
    const input = parseBody(updateWebhookSchema, ctx.request.body);
    const webhook = await ctx.services.webhooks.update(...webhookAt(ctx), input);
    ctx.body = publicWebhook(webhook, keyOf(ctx).project.name);
  });

  router.delete(`${BASE}/:id`, async (ctx) => {
    await ctx.services.webhooks.remove(...webhookAt(ctx));
    ctx.status = 204;
  });

  router.post(`${BASE}/:id/test`, async (ctx) => {
    ctx.body = await ctx.services.webhooks.test(...webhookAt(ctx));
  });

  router.post(`${BASE}/:id/rotate-secret`, async (ctx) => {
    const { webhook, secret } = await ctx.services.webhooks.rotateSecret(...webhookAt(ctx));
    ctx.body = { ...publicWebhook(webhook, keyOf(ctx).project.name), secret };
  });
}
