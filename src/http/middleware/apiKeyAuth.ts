/**
 * `/{ns}/...` routes: resolve the Bearer API key, confine it to its own project, count the
 * request against the key's rate limit, apply the project's browser-origin policy, and keep
 * read-only keys to GET.
 */
import { notFound, readOnlyKey } from '../../errors.js';
import { RESERVED_PROJECT_NAMES } from '../../services/accounts.js';
import type { KeyContext } from '../../services/context.js';
import { decideOrigin, originNotAllowed } from '../../services/origins.js';
import { writeRateLimitHeaders } from '../../services/rateLimit.js';
import type { Ctx } from '../types.js';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** A router `param('ns', ...)` handler, so it runs before any route middleware (body parsing). */
export function apiKeyAuth() {
  return async (ns: string, ctx: Ctx, next: () => Promise<unknown>): Promise<void> => {
    // Folio's own first segments are never a project (no project may take their names).
    if (RESERVED_PROJECT_NAMES.has(ns)) throw notFound('Route');
    const { apiKeys, rateLimiter } = ctx.services;
    // Node's header, read once (Koa's get lower-cases the name and switches on it per call).
    const authorization = ctx.req.headers.authorization;
    const ticket = authorization ? null : streamTicketOf(ctx);
    const key =
      ticket === null
        ? await apiKeys.authenticate(bearerToken(authorization))
        : await authenticateTicket(ctx, ticket);
    // Every request with a valid key counts and carries the headers, refused ones included.
    // Node's setHeader: Koa's set(object) builds two arrays per call, on every keyed request.
    writeRateLimitHeaders(await rateLimiter.hit(key), ctx.res);
    apiKeys.assertProject(key, ns);
    checkOrigin(ctx, key);
    ctx.state.key = key;
    // A stream ticket only lets its holder read a stream: any key may mint one.
    if (key.key.scope === 'read-only' && !READ_METHODS.has(ctx.method) && !isTicketMint(ctx))
      throw readOnlyKey();
    await next();
  };
}

/**
 * A browser page's request (it carries `Origin`) is answered for that origin alone, refusals
 * included, so the page can read why it was refused.
 */
function checkOrigin(ctx: Ctx, key: KeyContext): void {
  const origin = ctx.req.headers.origin;
  if (!origin) return;
  ctx.vary('Origin');
  ctx.set('Access-Control-Allow-Origin', origin);
  const decision = decideOrigin(
    origin,
    // Folio's own origin (Koa's `ctx.origin` is the request's Origin header in Koa 3).
    `${ctx.protocol}://${ctx.host}`,
    key.key.scope,
    key.project.allowedOrigins,
    key.project.id,
  );
  if (!decision.allowed) throw originNotAllowed(decision.message);
}

/**
 * A browser's `GET .../_stream?ticket=` (its EventSource cannot send Authorization): the ticket
 * stands for the key that minted it (see services/streams/tickets.ts). Null for anything else.
 */
function streamTicketOf(ctx: Ctx): string | null {
  if (ctx.method !== 'GET' || ctx.get('Authorization') || !ctx.path.endsWith('/_stream')) return null;
  const ticket = ctx.query.ticket;
  return typeof ticket === 'string' ? ticket : null;
}

function isTicketMint(ctx: Ctx): boolean {
  return ctx.method === 'POST' && ctx.path.endsWith('/_stream/tickets');
}

async function authenticateTicket(ctx: Ctx, ticket: string): Promise<KeyContext> {
  const { streams, apiKeys } = ctx.services;
  const collection = ctx.params.collection ?? '';
  const claims = await streams.redeemTicket(ticket, collection, ctx.get('Last-Event-ID') !== '');
  const key = await apiKeys.authenticateHash(claims.keyHash);
  if (key.project.id !== claims.projectId) throw notFound('Project');
  ctx.state.streamTicket = true;
  return key;
}
