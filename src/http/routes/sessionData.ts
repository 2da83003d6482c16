/**
 * The data API again under `/api/data/{env}`, for the dashboard: `/api/data/test/app/notes/ID`
 * is `/app/notes/ID` with the session of `app`'s owner in place of a test key. The same route
 * modules register on it, so both answer alike (bodies, errors, headers).
 */
import { Router } from '@koa/router';
import type { JsonObject } from '../../store/port.js';
import { collectionReach } from '../middleware/collectionReach.js';
import { dashboardKey } from '../middleware/dashboardKey.js';
import { rateLimit } from '../middleware/rateLimit.js';
import { sessionAuth } from '../middleware/sessionAuth.js';
import { beforeRoute } from '../routing.js';
import type { FolioContext, FolioRouter, FolioState } from '../types.js';
import { registerDocumentRoutes } from './documents.js';
import { registerIndexRoutes } from './indexes.js';
import { registerSchemaRoutes } from './schemas.js';
import { registerStreamRoutes } from './streams.js';
import { registerTransferRoutes } from './transfer.js';
import { registerTrashRoutes } from './trash.js';
import { registerWebhookRoutes } from './webhooks.js';

export function createSessionDataRouter(maxDocumentBytes: number, openApi: () => JsonObject): FolioRouter {
  const router = new Router<FolioState, FolioContext>({ prefix: '/api/data/:env' });
  // Before the route's own middleware, as on the keyed router (app.ts).
  router.param('ns', beforeRoute(sessionAuth(), dashboardKey(), rateLimit()));
  router.param('collection', collectionReach());
  // As on the keyed router: before the document routes, so `_webhooks`, `_import`... are never
  // read as document ids.
  registerWebhookRoutes(router);
  registerIndexRoutes(router);
  registerSchemaRoutes(router, openApi);
  registerTrashRoutes(router);
  registerTransferRoutes(router);
  registerStreamRoutes(router);
  registerDocumentRoutes(router, maxDocumentBytes);
  return router;
}
