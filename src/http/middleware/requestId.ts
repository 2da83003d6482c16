/** Every response carries `X-Request-Id`: the caller's own if it sent a sane one, else a new id. */
import type { Middleware } from 'koa';
import { newRequestId } from '../requestIds.js';
import type { FolioContext, FolioState } from '../types.js';

const SANE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

export function requestId(): Middleware<FolioState, FolioContext> {
  // Nothing to do after the rest of the chain: its promise is handed on, not awaited here.
  return (ctx, next) => {
    const incoming = ctx.get('X-Request-Id');
    ctx.state.requestId = incoming && SANE_ID.test(incoming) ? incoming : newRequestId();
    ctx.set('X-Request-Id', ctx.state.requestId);
    return next();
  };
}
