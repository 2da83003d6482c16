/**
 * `/api/data/{env}/{ns}/...`: the data routes for the dashboard, authenticated by the owner's
 * session (sessionAuth: cookie + CSRF check, or Bearer session) instead of an API key. The
 * session resolves to the account's dashboard key for that project environment
 * (services/sessionAccess.ts), then counted against the plan's rate limit like a key
 * (sessionData.ts); the data route handlers then run unchanged.
 */
import { accountOf, param, type RouteMiddleware } from '../types.js';

export function dashboardKey(): RouteMiddleware {
  return async (ctx, next) => {
    ctx.state.key = await ctx.services.sessionAccess.byProjectName(
      accountOf(ctx),
      ctx.state.sessionToken as string,
      param(ctx, 'ns'),
      param(ctx, 'env'),
    );
    await next();
  };
}
