/**
 * A browser page's request (it carries `Origin`) against the key's project policy
 * (services/origins.ts): answered for that origin alone, refusals included, so the page can read
 * why it was refused (403 `origin_not_allowed`).
 */
import { decideOrigin, originNotAllowed } from '../../services/origins.js';
import { keyOf, type RouteMiddleware } from '../types.js';

export function originPolicy(): RouteMiddleware {
  return (ctx, next) => {
    const origin = ctx.req.headers.origin;
    if (!origin) return next();
    ctx.vary('Origin');
    ctx.set('Access-Control-Allow-Origin', origin);
    const { key, project } = keyOf(ctx);
    // Folio's own origin (Koa's `ctx.origin` is the request's Origin header in Koa 3).
    const decision = decideOrigin(
      origin,
      `${ctx.protocol}://${ctx.host}`,
      key.scope,
      project.allowedOrigins,
      project.id,
    );
    if (!decision.allowed) throw originNotAllowed(decision.message);
    return next();
  };
}
