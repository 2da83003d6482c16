/**
 * Webhooks of a collection under `/{ns}/{collection}/_webhooks`. Registered before the document
 * routes, so `_webhooks` is never read as a document id (client ids cannot start with `_`).
 */
import { z } from 'zod';
import {
  publicWebhook,
  registerWebhookSchema,
  updateWebhookSchema,
} from '../../services/webhooks/registrations.js';
import { jsonBody } from '../middleware/body.js';
import {
  collectionPath,
  deliverySchema,
  locationHeader,
  webhookPath,
  webhookSchema,
  webhookWithSecretSchema,
} from '../openapi/components.js';
import { answer, bodyTypes, type OperationDeclaration, validatedJson } from '../openapi/declare.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';
import { bodyOf, declare, route } from './route.js';

const tags = ['webhooks'];

export const registerWebhook = declare({
  auth: 'key',
  // Webhooks send every document of a collection elsewhere, whatever the key may see: every
  // webhook route, reading ones too, needs write on the collection and no rule filter there.
  collectionAccess: 'every document',
  method: 'post',
  path: '/{ns}/{collection}/_webhooks',
  operationId: 'registerWebhook',
  tags,
  summary: 'Register a webhook (the only answer besides rotate-secret that shows the secret)',
  params: collectionPath,
  body: validatedJson(registerWebhookSchema),
  ok: answer(201, 'Registered', webhookWithSecretSchema, locationHeader),
  errors: [400, 403, 413, 415],
});

export const listWebhooks = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'get',
  path: '/{ns}/{collection}/_webhooks',
  operationId: 'listWebhooks',
  tags,
  summary: 'The collection’s webhooks',
  params: collectionPath,
  ok: answer(200, 'Webhooks', z.object({ webhooks: z.array(webhookSchema) })),
  errors: [403],
});

export const readWebhook = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'get',
  path: '/{ns}/{collection}/_webhooks/{id}',
  operationId: 'readWebhook',
  tags,
  summary: 'A webhook and its last deliveries, newest first',
  params: webhookPath,
  ok: answer(200, 'The webhook', webhookSchema.extend({ deliveries: z.array(deliverySchema) })),
  errors: [403, 404],
});

export const updateWebhook = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'patch',
  path: '/{ns}/{collection}/_webhooks/{id}',
  operationId: 'updateWebhook',
  tags,
  summary: 'Change url, events, description or status (`active` re-enables and resets the failure count)',
  params: webhookPath,
  body: validatedJson(updateWebhookSchema),
  ok: answer(200, 'The webhook', webhookSchema),
  errors: [400, 403, 404, 413, 415],
});

export const deleteWebhook = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'delete',
  path: '/{ns}/{collection}/_webhooks/{id}',
  operationId: 'deleteWebhook',
  tags,
  summary: 'Delete a webhook',
  params: webhookPath,
  ok: answer(204, 'Deleted'),
  errors: [403, 404],
});

export const testWebhook = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'post',
  path: '/{ns}/{collection}/_webhooks/{id}/test',
  operationId: 'testWebhook',
  tags,
  summary: 'Send one `webhook.test` delivery now and answer with its record',
  params: webhookPath,
  ok: answer(200, 'The delivery', deliverySchema),
  errors: [403, 404],
});

export const rotateWebhookSecret = declare({
  auth: 'key',
  collectionAccess: 'every document',
  method: 'post',
  path: '/{ns}/{collection}/_webhooks/{id}/rotate-secret',
  operationId: 'rotateWebhookSecret',
  tags,
  summary: 'Replace the signing secret; the new one is shown once',
  params: webhookPath,
  ok: answer(200, 'The webhook with its new secret', webhookWithSecretSchema),
  errors: [403, 404],
});

export const WEBHOOK_OPERATIONS: OperationDeclaration[] = [
  registerWebhook,
  listWebhooks,
  readWebhook,
  updateWebhook,
  deleteWebhook,
  testWebhook,
  rotateWebhookSecret,
];

/** The caller, collection and webhook id a `.../_webhooks/{id}` route addresses. */
function webhookAt(ctx: Ctx) {
  return [keyOf(ctx), param(ctx, 'collection'), param(ctx, 'id')] as const;
}

export function registerWebhookRoutes(router: FolioRouter): void {
  const body = jsonBody(bodyTypes(registerWebhook), 16 * 1024);

  route(router, registerWebhook, body, async (ctx) => {
    const key = keyOf(ctx);
    const input = bodyOf(ctx, registerWebhook);
    const { webhook, secret } = await ctx.services.webhooks.register(key, param(ctx, 'collection'), input);
    ctx.status = 201;
    ctx.set('Location', `/${param(ctx, 'ns')}/${param(ctx, 'collection')}/_webhooks/${webhook.id}`);
    ctx.body = { ...publicWebhook(webhook, key.project.name), secret };
  });

  route(router, listWebhooks, async (ctx) => {
    const key = keyOf(ctx);
    const webhooks = await ctx.services.webhooks.list(key, param(ctx, 'collection'));
    ctx.body = { webhooks: webhooks.map((w) => publicWebhook(w, key.project.name)) };
  });

  route(router, readWebhook, async (ctx) => {
    const { webhook, deliveries } = await ctx.services.webhooks.getWithDeliveries(...webhookAt(ctx));
    ctx.body = { ...publicWebhook(webhook, keyOf(ctx).project.name), deliveries };
  });

  route(router, updateWebhook, body, async (ctx) => {
    const input = bodyOf(ctx, updateWebhook);
    const webhook = await ctx.services.webhooks.update(...webhookAt(ctx), input);
    ctx.body = publicWebhook(webhook, keyOf(ctx).project.name);
  });

  route(router, deleteWebhook, async (ctx) => {
    await ctx.services.webhooks.remove(...webhookAt(ctx));
    ctx.status = 204;
  });

  route(router, testWebhook, async (ctx) => {
    ctx.body = await ctx.services.webhooks.test(...webhookAt(ctx));
  });

  route(router, rotateWebhookSecret, async (ctx) => {
    const { webhook, secret } = await ctx.services.webhooks.rotateSecret(...webhookAt(ctx));
    ctx.body = { ...publicWebhook(webhook, keyOf(ctx).project.name), secret };
  });
}
