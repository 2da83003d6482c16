/**
 * `/{ns}/...` routes: resolve the Bearer API key, confine it to its own project, count the
 * request against the key's rate limit, and keep read-only keys to GET.
 */
import type { Middleware } from 'koa';
import { readOnlyKey } from '../../errors.js';
import { rateLimitHeaders } from '../../services/rateLimit.js';
import type { FolioContext, FolioState } from '../types.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

export function apiKeyAuth(): Middleware<FolioState, FolioContext> {
  return async (ctx, next) => {
    const { apiKeys, rateLimiter } = ctx.services;
    const key = await apiKeys.authenticate(bearerToken(ctx.get('Authorization')));
    const ns = (ctx as { params?: Record<string, string> }).params?.ns;
    if (ns !== undefined) apiKeys.assertProject(key, ns);
    ctx.state.key = key;
    const limit = await rateLimiter.hit(key);
    ctx.set(rateLimitHeaders(limit));
    if (key.key.scope === 'read-only' && !READ_METHODS.has(ctx.method)) throw readOnlyKey();
    await next();
  };
}
