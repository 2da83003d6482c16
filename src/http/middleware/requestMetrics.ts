/**
 * Counts and times every request under its route template (`/:ns/:collection/:id`), never its
 * raw path, so no key, project or document id becomes a label. Outermost but for the request id,
 * so it sees the status the error mapping chose.
 */
import type { Middleware } from 'koa';
import type { FolioMetrics } from '../../operations/metrics.js';
import type { FolioContext, FolioState } from '../types.js';

/** Error codes of a 429, the only strings of a body that become a label. */
const REJECTIONS = new Set(['rate_limited', 'too_many_streams']);

export function requestMetrics(metrics: FolioMetrics): Middleware<FolioState, FolioContext> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
      const labels = {
        method: ctx.method,
        route: typeof matched === 'string' ? matched : 'unmatched',
        status: String(ctx.status),
      };
      // One observation counts the request too: folio_http_requests_total is read from it.
      metrics.httpDuration.series(labels).observe((performance.now() - started) / 1000);
      if (ctx.status === 429) {
        const code = (ctx.body as { error?: { code?: unknown } } | null)?.error?.code;
        if (typeof code === 'string' && REJECTIONS.has(code))
          metrics.rateLimitRejections.inc({ reason: code });
      }
    }
  };
}
