/** One pino line per request; never the Authorization header, cookies or bodies. */
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { FolioContext, FolioState } from '../types.js';

export function accessLog(logger: Logger): Middleware<FolioState, FolioContext> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.log = logger.child({ requestId: ctx.state.requestId });
    try {
      await next();
    } finally {
      ctx.log.info(
        {
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
          key: ctx.state.key?.key.id,
        },
        'request',
      );
    }
  };
}
