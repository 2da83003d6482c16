/** `/api/...` account routes: a session from the `folio_session` cookie or a Bearer token. */
import type { Middleware } from 'koa';
import { unauthorized } from '../../errors.js';
import type { FolioContext, FolioState } from '../types.js';
import { bearerToken } from './apiKeyAuth.js';

export const SESSION_COOKIE = 'folio_session';

export function sessionAuth(): Middleware<FolioState, FolioContext> {
  return async (ctx, next) => {
    const token = bearerToken(ctx.get('Authorization')) ?? ctx.cookies.get(SESSION_COOKIE);
    if (!token)
      throw unauthorized('A session is required (cookie folio_session or Authorization: Bearer <session>).');
    ctx.state.account = await ctx.services.accounts.authenticateSession(token);
    ctx.state.sessionToken = token;
    await next();
  };
}
