/** The plans and their limits, as configured: public, so a signup page can show them. */
import type { FolioRouter } from '../types.js';

export function registerPlanRoutes(router: FolioRouter): void {
  router.get('/api/plans', async (ctx) => {
    ctx.body = { plans: ctx.services.config.plans };
  });
}
