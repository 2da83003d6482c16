/**
 * `/api/data/{env}/{ns}/...`: the data routes for the dashboard, authenticated by the owner's
 * session (cookie + CSRF check, or Bearer session) instead of an API key. The session resolves to
 * the account's dashboard key for that project environment (services/sessionAccess.ts), counted
 * against the plan's rate limit like a key; the data route handlers then run unchanged.
 */
import { rateLimitHeaders } from '../../services/rateLimit.js';
import { accountOf, type Ctx, param } from '../types.js';
import { sessionAuth } from './sessionAuth.js';

/** A router `param('ns', ...)` handler, so it runs before any route middleware (body parsing). */
export function sessionDataAuth() {
  const session = sessionAuth();
  return async (ns: string, ctx: Ctx, next: () => Promise<unknown>): Promise<void> => {
    await session(ctx, async () => {
      const { sessionAccess, rateLimiter } = ctx.services;
      const key = await sessionAccess.byProjectName(
        accountOf(ctx),
        ctx.state.sessionToken as string,
        ns,
        param(ctx, 'env'),
      );
      ctx.set(rateLimitHeaders(await rateLimiter.hit(key)));
      ctx.state.key = key;
      await next();
    });
  };
}
