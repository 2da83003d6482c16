/**
 * One pino line per request; never the Authorization header, cookies or bodies. Kept cheap on
 * the request path: the line carries the request id itself (no child logger per request; the
 * routes' `ctx.log`, used on rare error paths, is made on first use), nothing is built when the
 * level is off, and the logger's destination writes asynchronously (src/server.ts).
 */
import { performance } from 'node:perf_hooks';
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { FolioContext, FolioState } from '../types.js';

export function accessLog(logger: Logger): Middleware<FolioState, FolioContext> {
  const enabled = logger.isLevelEnabled('info');
  return async (ctx, next) => {
    let child: Logger | undefined;
    Object.defineProperty(ctx, 'log', {
      configurable: true,
      get: () => {
        child ??= logger.child({ requestId: ctx.state.requestId });
        return child;
      },
    });
    if (!enabled) return next();
    const started = performance.now();
    try {
      await next();
    } finally {
      logger.info(
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: performance.now() - started,
          key: ctx.state.key?.key.id,
        },
        'request',
      );
    }
  };
}
