/**
 * `/api/...` account routes: a session from the `folio_session` cookie or a Bearer token. A
 * cookie is sent by the browser on its own, so a state-changing request it authenticates must
 * also pass the CSRF check (services/csrf.ts); a Bearer token is never sent by a browser on its
 * own and needs none.
 */
import type { Middleware } from 'koa';
import { unauthorized } from '../../errors.js';
import { CSRF_HEADER, csrfFailed, decideCsrf, SAFE_METHODS } from '../../services/csrf.js';
import type { FolioContext, FolioState } from '../types.js';
import { bearerToken } from './authenticate.js';

export const SESSION_COOKIE = 'folio_session';

export function sessionAuth(): Middleware<FolioState, FolioContext> {
  return async (ctx, next) => {
    const bearer = bearerToken(ctx.get('Authorization'));
    const token = bearer ?? ctx.cookies.get(SESSION_COOKIE);
    if (!token)
      throw unauthorized('A session is required (cookie folio_session or Authorization: Bearer <session>).');
    if (!bearer && !SAFE_METHODS.has(ctx.method)) {
      const decision = decideCsrf({
        sessionToken: token,
        presented: ctx.get(CSRF_HEADER) || undefined,
        origin: ctx.get('Origin') || undefined,
        ownOrigin: `${ctx.protocol}://${ctx.host}`,
      });
      if (!decision.ok) throw csrfFailed(decision.message);
    }
    ctx.state.account = await ctx.services.accounts.authenticateSession(token);
    ctx.state.sessionToken = token;
    await next();
  };
}
