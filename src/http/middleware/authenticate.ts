/**
 * `/{ns}/...` routes: who calls. The Bearer API key, or, without `Authorization`, the credential
 * the route's declaration takes in its place (a stream's ticket: routes/streams.ts), resolved to
 * the key in `ctx.state.key`; 401 otherwise.
 */
import { declarationOf } from '../routes/declared.js';
import type { RouteMiddleware } from '../types.js';

/** The token of an `Authorization: Bearer <token>` header. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

export function authenticate(): RouteMiddleware {
  return async (ctx, next) => {
    // Node's header, read once (Koa's get lower-cases the name and switches on it per call).
    const authorization = ctx.req.headers.authorization;
    const byRoute = authorization ? null : (declarationOf(ctx).credential?.(ctx) ?? null);
    ctx.state.key = await (byRoute ?? ctx.services.apiKeys.authenticate(bearerToken(authorization)));
    await next();
  };
}
