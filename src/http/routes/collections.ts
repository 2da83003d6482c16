/** The collections of a project environment with their document counts (session-authenticated). */
import { sessionAuth } from '../middleware/sessionAuth.js';
import { accountOf, type FolioRouter, param } from '../types.js';

export function registerCollectionRoutes(router: FolioRouter): void {
  router.get('/api/projects/:projectId/collections', sessionAuth(), async (ctx) => {
    const key = await ctx.services.sessionAccess.byProjectId(
      accountOf(ctx),
      ctx.state.sessionToken as string,
      param(ctx, 'projectId'),
      ctx.query.env,
    );
    ctx.body = { env: key.scope.env, collections: await ctx.services.collections.list(key) };
  });
}
