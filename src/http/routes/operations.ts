/**
 * Routes for operators: `GET /healthz` (the store answers), `GET /readyz` (ready to take traffic) and `GET /metrics` (Prometheus).
 * Metrics answer only when enabled, and only to `Authorization: Bearer <metrics.token>`: they
 * are served on the API port, so a token (never a tenant's key) is what keeps them private.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { notFound, unauthorized } from '../../errors.js';
import type { FolioMetrics } from '../../operations/metrics.js';
import type { Readiness } from '../../operations/readiness.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import type { FolioRouter } from '../types.js';
import { declare, route } from './route.js';

const tags = ['system'];
const store = z.string().meta({ description: 'The store kind: `embedded` or `mongodb`.' });

export const health = declare({
  auth: 'public',
  method: 'get',
  path: '/healthz',
  operationId: 'health',
  tags,
  summary: 'Health: 200 while the store answers',
  ok: {
    ...answer(
      200,
      'Healthy',
      z.object({
        status: z.literal('ok'),
        store,
        streams: z
          .object({
            changeSources: z.int().min(0).meta({ description: 'Change sources in this instance (0 or 1).' }),
          })
          .meta({
            description:
              'This instance’s change source. Not how many streams are open: this answers without a key, and that count is in the metrics (behind their token).',
          }),
      }),
    ),
    ...answer(503, 'The store does not answer', z.object({ status: z.literal('unavailable'), store })),
  },
  errors: [],
});

const readinessSchema = z.object({
  status: z.enum(['ready', 'unavailable']),
  phase: z.enum(['starting', 'running', 'stopping']),
  checks: z.object({ store: z.boolean(), jobs: z.boolean(), webhookDispatcher: z.boolean() }),
});

export const ready = declare({
  auth: 'public',
  method: 'get',
  path: '/readyz',
  operationId: 'ready',
  tags,
  summary: 'Readiness: 200 only when started, not stopping, the store answers and background jobs run',
  ok: {
    ...answer(200, 'Ready to take traffic', readinessSchema),
    ...answer(503, 'Starting, stopping, or a part is down (see `checks`)', readinessSchema),
  },
  errors: [],
});

export const metrics = declare({
  auth: 'metrics',
  method: 'get',
  path: '/metrics',
  operationId: 'metrics',
  tags,
  summary: 'Prometheus metrics (when `metrics.enabled`; the metrics token, never an API key)',
  ok: {
    '200': {
      description: 'Prometheus text exposition format',
      content: { 'text/plain': { schema: z.string() } },
      headers: z.object({ 'Cache-Control': z.literal('no-store') }),
    },
  },
  errors: [404],
});

export const OPERATIONS_OPERATIONS: OperationDeclaration[] = [health, ready, metrics];

export interface OperationsParts {
  readiness: Readiness;
  /** Null when `metrics.enabled` is off: `/metrics` answers 404. */
  metrics: FolioMetrics | null;
  metricsToken: string;
}

export function registerOperationRoutes(router: FolioRouter, parts: OperationsParts): void {
  // For load balancers: 200 only while the store answers, so an instance that lost its
  // database is taken out of rotation.
  route(router, health, async (ctx) => {
    const { store } = ctx.services;
    try {
      await store.ping();
      // Change sources in this instance (0 or 1). Not how many streams are open: this answers
      // without a key, and that count is the metrics' (behind their token).
      ctx.body = { status: 'ok', store: store.kind, streams: { changeSources: store.changes.sourceCount } };
    } catch {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', store: store.kind };
    }
  });

  route(router, ready, async (ctx) => {
    const report = await parts.readiness.report();
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { status: report.ready ? 'ready' : 'unavailable', phase: report.phase, checks: report.checks };
  });

  const expected = digest(parts.metricsToken);
  route(router, metrics, async (ctx) => {
    const { metrics: registry } = parts;
    if (!registry) throw notFound('Route');
    const header = ctx.get('Authorization');
    const token = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
    // Digests of equal length, so the comparison takes the same time whatever was sent.
    if (!token || !timingSafeEqual(digest(token), expected)) {
      throw unauthorized('The metrics token is required (Authorization: Bearer <metrics.token>).');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = registry.contentType();
    ctx.body = await registry.render();
  });
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
