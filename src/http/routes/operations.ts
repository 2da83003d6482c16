/**
 * Routes for operators: `GET /readyz` (ready to take traffic) and `GET /metrics` (Prometheus).
 * Metrics answer only when enabled, and only to `Authorization: Bearer <metrics.token>`: they
 * are served on the API port, so a token (never a tenant's key) is what keeps them private.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { notFound, unauthorized } from '../../errors.js';
import type { FolioMetrics } from '../../operations/metrics.js';
import type { Readiness } from '../../operations/readiness.js';
import type { FolioRouter } from '../types.js';

export interface OperationsParts {
  readiness: Readiness;
  /** Null when `metrics.enabled` is off: `/metrics` answers 404. */
  metrics: FolioMetrics | null;
  metricsToken: string;
}

export function registerOperationRoutes(router: FolioRouter, parts: OperationsParts): void {
  router.get('/readyz', async (ctx) => {
    const report = await parts.readiness.report();
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { status: report.ready ? 'ready' : 'unavailable', phase: report.phase, checks: report.checks };
  });

  const expected = digest(parts.metricsToken);
  router.get('/metrics', async (ctx) => {
    const { metrics } = parts;
    if (!metrics) throw notFound('Route');
    const header = ctx.get('Authorization');
    const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
    // Digests of equal length, so the comparison takes the same time whatever was sent.
    if (!token || !timingSafeEqual(digest(token), expected)) {
      throw unauthorized('The metrics token is required (Authorization: Bearer <metrics.token>).');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.contentType();
    ctx.body = await metrics.render();
  });
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
