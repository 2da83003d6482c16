/**
 * Every request with a valid key counts against the key's rate limit and carries the
 * `X-RateLimit-*` headers, refused ones included; over the limit, 429 (services/rateLimit.ts).
 */
import { writeRateLimitHeaders } from '../../services/rateLimit.js';
import { keyOf, type RouteMiddleware } from '../types.js';

export function rateLimit(): RouteMiddleware {
  return async (ctx, next) => {
    // Node's setHeader: Koa's set(object) builds two arrays per call, on every keyed request.
    writeRateLimitHeaders(await ctx.services.rateLimiter.hit(keyOf(ctx)), ctx.res);
    await next();
  };
}
