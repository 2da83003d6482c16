/** Every response carries `X-Request-Id`: the caller's own if it sent a sane one, else a new id. */
import type { Middleware } from 'koa';
import { newRequestId } from '../requestIds.js';
import type { FolioContext, FolioState } from '../types.js';

const SANE_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

export function requestId(): Middleware<FolioState, FolioContext> {
  // Nothing to do after the rest of the chain: its promise is handed on, not awaited here.
  // Node's own header access (Koa's get and set add a case switch and checks per call): the
  // first thing every request does, before anything has been sent.
  return (ctx, next) => {
    const incoming = ctx.req.headers['x-request-id'];
    const id = typeof incoming === 'string' && SANE_ID.test(incoming) ? incoming : newRequestId();
    ctx.state.requestId = id;
    ctx.res.setHeader('X-Request-Id', id);
    return next();
  };
}
