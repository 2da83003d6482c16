/**
 * One line per request, in pino's format, to the logger's own stream; never the Authorization
 * header, cookies or bodies. Kept cheap on the request path: the line is formatted directly
 * (accessLine.ts) rather than through pino's serialiser, it carries the request id itself (no
 * child logger per request; the routes' `ctx.log`, used on rare error paths, is made on first
 * use: defineRequestLog), nothing is built when the level is off, and the stream writes
 * asynchronously, in batches (src/logDestination.ts).
 */
import { performance } from 'node:perf_hooks';
import type { Middleware } from 'koa';
import type { DestinationStream, Logger } from 'pino';
import { formatAccessLine, processBindings } from '../accessLine.js';
import { clientErrorStatus } from '../clientErrors.js';
import type { FolioContext, FolioState } from '../types.js';

const CHILD = Symbol('requestLogger');

/**
 * `ctx.log`: a child logger carrying the request id, made on first use. Defined once on the
 * application's context prototype, so a request that never logs an error costs nothing here.
 */
export function defineRequestLog(context: object, logger: Logger): void {
  Object.defineProperty(context, 'log', {
    configurable: true,
    get(this: { state?: FolioState; [CHILD]?: Logger }): Logger {
      // The prototype itself (no request): the base logger.
      if (!this.state) return logger;
      this[CHILD] ??= logger.child({ requestId: this.state.requestId });
      return this[CHILD];
    },
  });
}

/**
 * `sink`: the stream the server's logger writes to (pino's destination); no access log without it.
 * `inner`: the middleware just inside the log (the error mapping), called directly rather than
 * as a step of its own in the chain.
 */
export function accessLog(
  logger: Logger,
  sink: DestinationStream | null,
  inner: Middleware<FolioState, FolioContext> = (_ctx, next) => next(),
): Middleware<FolioState, FolioContext> {
  if (!sink || !logger.isLevelEnabled('info')) return inner;
  const bindings = processBindings();
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await inner(ctx, next);
    } finally {
      sink.write(
        formatAccessLine(bindings, Date.now(), {
          requestId: ctx.state.requestId,
          method: ctx.method,
          path: ctx.path,
          // A late body answered 408 at the socket shows in Koa as a failed read (400).
          status: clientErrorStatus(ctx.res) ?? ctx.status,
          ms: performance.now() - started,
          key: ctx.state.key?.key.id,
        }),
      );
    }
  };
}
