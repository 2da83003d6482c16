/** The collections of a project environment with their document counts (session-authenticated). */
import { z } from 'zod';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import { accountOf, type FolioRouter, param } from '../types.js';
import { declare, route } from './route.js';

const env = z.enum(['live', 'test']).meta({ description: 'The project environment whose data to use.' });
const collectionInfo = z
  .object({ name: z.string(), documents: z.int().min(0) })
  .meta({ id: 'CollectionInfo' });

export const listCollections = declare({
  auth: 'session',
  method: 'get',
  path: '/api/projects/{projectId}/collections',
  operationId: 'listCollections',
  tags: ['accounts'],
  summary: 'The collections of a project environment that hold documents, with their counts',
  params: z.object({ projectId: z.string().meta({ description: 'Project id (`prj_...`).' }) }),
  query: z.object({ env }),
  ok: answer(200, 'Collections by name', z.object({ env, collections: z.array(collectionInfo) })),
  errors: [400, 404],
});

export const COLLECTION_OPERATIONS: OperationDeclaration[] = [listCollections];

export function registerCollectionRoutes(router: FolioRouter): void {
  route(router, listCollections, async (ctx) => {
    const key = await ctx.services.sessionAccess.byProjectId(
      accountOf(ctx),
      ctx.state.sessionToken as string,
      param(ctx, 'projectId'),
      ctx.query.env,
    );
    ctx.body = { env: key.scope.env, collections: await ctx.services.collections.list(key) };
  });
}
