/** The plans and their limits, as configured: public, so a signup page can show them. */
import { z } from 'zod';
import { planLimitsSchema } from '../../config/schema.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import type { FolioRouter } from '../types.js';
import { declare, route } from './route.js';

export const listPlans = declare({
  auth: 'public',
  method: 'get',
  path: '/api/plans',
  operationId: 'listPlans',
  tags: ['accounts'],
  summary: 'Every plan and its limits, as configured (no session needed)',
  ok: answer(
    200,
    'Plans',
    z.object({
      plans: z.object({ free: planLimitsSchema, pro: planLimitsSchema, team: planLimitsSchema }),
    }),
  ),
  errors: [],
});

export const PLAN_OPERATIONS: OperationDeclaration[] = [listPlans];

export function registerPlanRoutes(router: FolioRouter): void {
  route(router, listPlans, async (ctx) => {
    ctx.body = { plans: ctx.services.config.plans };
  });
}
