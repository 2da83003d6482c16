/** API key management: create, list, change rules, revoke, rotate (session-authenticated). */
import { z } from 'zod';
import { projectNameSchema } from '../../services/accounts.js';
import { createKeySchema, publicKey, updateKeySchema } from '../../services/apiKeys.js';
import { jsonBody } from '../middleware/body.js';
import { apiKeySchema, keyWithSecretSchema } from '../openapi/components.js';
import { answer, bodyTypes, type OperationDeclaration, validatedJson } from '../openapi/declare.js';
import { accountOf, type FolioRouter, param } from '../types.js';
import { requireString } from './parseBody.js';
import { bodyOf, declare, route } from './route.js';

const tags = ['keys'];
const keyId = z.object({ keyId: z.string().meta({ description: 'Key id (`key_...`).' }) });

export const createKey = declare({
  auth: 'session',
  method: 'post',
  path: '/api/keys',
  operationId: 'createKey',
  tags,
  summary: 'Create an API key (the raw key is shown once)',
  body: validatedJson(createKeySchema),
  ok: answer(201, 'Created', keyWithSecretSchema),
  errors: [400, 404, 413, 415],
});

export const listKeys = declare({
  auth: 'session',
  method: 'get',
  path: '/api/keys',
  operationId: 'listKeys',
  tags,
  summary: 'A project’s keys, newest first',
  query: z.object({ project: projectNameSchema }),
  ok: answer(200, 'Keys', z.object({ keys: z.array(apiKeySchema) })),
  errors: [400, 404],
});

export const revokeKey = declare({
  auth: 'session',
  method: 'delete',
  path: '/api/keys/{keyId}',
  operationId: 'revokeKey',
  tags,
  summary: 'Revoke a key',
  params: keyId,
  ok: answer(204, 'Revoked'),
  errors: [404],
});

export const rotateKey = declare({
  auth: 'session',
  method: 'post',
  path: '/api/keys/{keyId}/rotate',
  operationId: 'rotateKey',
  tags,
  summary: 'Rotate a key: the old secret stops working at once',
  params: keyId,
  ok: answer(201, 'The new key', keyWithSecretSchema),
  errors: [404],
});

export const updateKey = declare({
  auth: 'session',
  method: 'patch',
  path: '/api/keys/{keyId}',
  operationId: 'updateKey',
  tags,
  summary: 'Change a key’s rules (null: none); the secret stays the same',
  description:
    'Takes effect at once on this instance and within `auth.keyCacheMs` on the others, as a revocation does. See docs/keys.md for what rules mean.',
  params: keyId,
  body: validatedJson(updateKeySchema),
  ok: answer(200, 'The key', apiKeySchema),
  errors: [400, 404, 413, 415],
});

export const KEY_OPERATIONS: OperationDeclaration[] = [createKey, listKeys, revokeKey, rotateKey, updateKey];

export function registerKeyRoutes(router: FolioRouter): void {
  const body = jsonBody(bodyTypes(createKey), 64 * 1024);

  route(router, createKey, body, async (ctx) => {
    const { project: projectName, ...input } = bodyOf(ctx, createKey);
    const account = accountOf(ctx);
    const project = await ctx.services.accounts.ownProjectByName(account, projectName);
    const { apiKey, rawKey } = await ctx.services.apiKeys.create(account, project, input);
    ctx.status = 201;
    ctx.body = { apiKey: publicKey(apiKey, project), rawKey };
  });

  route(router, listKeys, async (ctx) => {
    const name = requireString(ctx.query.project, 'project');
    const project = await ctx.services.accounts.ownProjectByName(accountOf(ctx), name);
    const keys = await ctx.services.apiKeys.list(project);
    ctx.body = { keys: keys.map((key) => publicKey(key, project)) };
  });

  route(router, revokeKey, async (ctx) => {
    const { key } = await ctx.services.apiKeys.ownKey(accountOf(ctx), param(ctx, 'keyId'));
    await ctx.services.apiKeys.revoke(key);
    ctx.status = 204;
  });

  route(router, updateKey, body, async (ctx) => {
    const { key, project } = await ctx.services.apiKeys.ownKey(accountOf(ctx), param(ctx, 'keyId'));
    const updated = await ctx.services.apiKeys.setRules(key, bodyOf(ctx, updateKey).rules);
    ctx.body = publicKey(updated, project);
  });

  route(router, rotateKey, async (ctx) => {
    const { key, project } = await ctx.services.apiKeys.ownKey(accountOf(ctx), param(ctx, 'keyId'));
    const { apiKey, rawKey } = await ctx.services.apiKeys.rotate(key);
    ctx.status = 201;
    ctx.body = { apiKey: publicKey(apiKey, project), rawKey };
  });
}
