/**
 * `GET /`: where to go from the URL `npm start` prints: the dashboard, the API reference and
 * document, the health checks. JSON, like every other answer, and readable in a browser.
 */
import { z } from 'zod';
import { FOLIO_VERSION } from '../../version.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import type { FolioRouter } from '../types.js';
import { declare, route } from './route.js';

const LINKS = {
  dashboard: '/dashboard/',
  docs: '/docs',
  openapi: '/openapi.json',
  health: '/healthz',
  ready: '/readyz',
};

export const serviceIndex = declare({
  auth: 'public',
  method: 'get',
  path: '/',
  operationId: 'serviceIndex',
  tags: ['system'],
  summary: 'Links to the dashboard, the API reference and the health checks',
  ok: answer(
    200,
    'The service and its links (paths on this server)',
    z.object({
      name: z.literal('Folio'),
      version: z.string(),
      links: z.object({
        dashboard: z
          .literal(LINKS.dashboard)
          .meta({ description: 'The dashboard (sign in, projects, keys, data).' }),
        docs: z.literal(LINKS.docs).meta({ description: 'The API reference page.' }),
        openapi: z.literal(LINKS.openapi).meta({ description: 'The OpenAPI 3.1 document.' }),
        health: z.literal(LINKS.health).meta({ description: 'Liveness: the process and its store answer.' }),
        ready: z.literal(LINKS.ready).meta({ description: 'Readiness: this instance takes traffic.' }),
      }),
    }),
  ),
  errors: [],
});

export const SERVICE_INDEX_OPERATIONS: OperationDeclaration[] = [serviceIndex];

export function registerServiceIndexRoute(router: FolioRouter): void {
  const body = { name: 'Folio', version: FOLIO_VERSION, links: LINKS };
  route(router, serviceIndex, (ctx) => {
    ctx.body = body;
  });
}
