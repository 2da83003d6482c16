/** Koa state and context types shared by Folio's middleware and routes. */
import type { Router, RouterContext } from '@koa/router';
import type { DefaultContext, Next } from 'koa';
import type { Logger } from 'pino';
import type { KeyContext } from '../services/context.js';
import type { Services } from '../services/index.js';
import type { AccountRecord } from '../store/port.js';

export interface FolioState {
  requestId: string;
  /** Set by `authenticate` on `/{ns}/...` routes (by the session on the dashboard's). */
  key?: KeyContext;
  /** Set by the session middleware on `/api/...` routes. */
  account?: AccountRecord;
  sessionToken?: string;
  /** The request was authenticated by a stream ticket (`GET .../_stream?ticket=`). */
  streamTicket?: boolean;
}

export interface FolioContext extends DefaultContext {
  services: Services;
  log: Logger;
}

export type Ctx = RouterContext<FolioState, FolioContext>;
export type FolioRouter = Router<FolioState, FolioContext>;

/** Middleware that runs inside a router: it sees the matched route (params, its name). */
export type RouteMiddleware = (ctx: Ctx, next: Next) => unknown;

/** The caller's key context; only call after `authenticate` (or the dashboard's key) ran. */
export function keyOf(ctx: Ctx): KeyContext {
  if (!ctx.state.key) throw new Error('authenticate did not run for this route');
  return ctx.state.key;
}

export function accountOf(ctx: Ctx): AccountRecord {
  if (!ctx.state.account) throw new Error('session middleware did not run for this route');
  return ctx.state.account;
}

/** A route parameter; the router guarantees it is present for the routes that declare it. */
export function param(ctx: Ctx, name: string): string {
  const value = ctx.params[name];
  if (value === undefined) throw new Error(`route has no :${name} parameter`);
  return value;
}
