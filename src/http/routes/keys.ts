/** API key management: create, list, revoke, rotate (session-authenticated). */
import { createKeySchema, publicKey } from '../../services/apiKeys.js';
import { JSON_TYPE, jsonBody } from '../middleware/body.js';
import { sessionAuth } from '../middleware/sessionAuth.js';
import { accountOf, type FolioRouter, param } from '../types.js';
import { parseBody, requireString } from './parseBody.js';

export function registerKeyRoutes(router: FolioRouter): void {
  const body = jsonBody([JSON_TYPE], 64 * 1024);
  const session = sessionAuth();

  router.post('/api/keys', session, body, async (ctx) => {
    const { project: projectName, ...input } = parseBody(createKeySchema, ctx.request.body);
    const account = accountOf(ctx);
    const project = await ctx.services.accounts.ownProjectByName(account, projectName);
    const { apiKey, rawKey } = await ctx.services.apiKeys.create(account, project, input);
    ctx.status = 201;
    ctx.body = { apiKey: publicKey(apiKey, project), rawKey };
  });

  router.get('/api/keys', session, async (ctx) => {
    const name = requireString(ctx.query.project, 'project');
    const project = await ctx.services.accounts.ownProjectByName(accountOf(ctx), name);
    const keys = await ctx.services.apiKeys.list(project);
    ctx.body = { keys: keys.map((key) => publicKey(key, project)) };
  });

  router.delete('/api/keys/:keyId', session, async (ctx) => {
    const { key } = await ctx.services.apiKeys.ownKey(accountOf(ctx), param(ctx, 'keyId'));
    await ctx.services.apiKeys.revoke(key);
    ctx.status = 204;
  });

  router.post('/api/keys/:keyId/rotate', session, async (ctx) => {
    const { key, project } = await ctx.services.apiKeys.ownKey(accountOf(ctx), param(ctx, 'keyId'));
    const { apiKey, rawKey } = await ctx.services.apiKeys.rotate(key);
    ctx.status = 201;
    ctx.body = { apiKey: publicKey(apiKey, project), rawKey };
  });
}
