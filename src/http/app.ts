/**
 * The Koa application. Cross-cutting concerns are middleware composed here, top to bottom:
 * request id → request metrics (when enabled) → CORS → access log → error mapping and JSON 404 →
 * routes → JSON 405.
 * The routes are two sides chosen by the path's first segment (routing.ts): Folio's own (account
 * routes by session, dashboard, docs, operations) and the projects' data routes, where a matched
 * route first meets, in order: project path → authenticate → rate limit → project scope →
 * origin policy → read-only check, then the key's reach of the collection (createDataRouter).
 */
import { Router } from '@koa/router';
import Koa from 'koa';
import type { DestinationStream, Logger } from 'pino';
import { Readiness } from '../operations/readiness.js';
import type { Services } from '../services/index.js';
import type { JsonObject } from '../store/port.js';
import { FOLIO_VERSION } from '../version.js';
import { loadDashboardAssets } from './dashboard/assets.js';
import { createDashboardRouter } from './dashboard/routes.js';
import { accessLog, defineRequestLog } from './middleware/accessLog.js';
import { authenticate } from './middleware/authenticate.js';
import { collectionReach } from './middleware/collectionReach.js';
import { corsPolicy } from './middleware/cors.js';
import { errorHandler } from './middleware/errorHandler.js';
import { originPolicy } from './middleware/originPolicy.js';
import { projectPath, projectScope } from './middleware/projectScope.js';
import { rateLimit } from './middleware/rateLimit.js';
import { readOnlyCheck } from './middleware/readOnlyCheck.js';
import { requestId } from './middleware/requestId.js';
import { requestMetrics } from './middleware/requestMetrics.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { shareParsedQueries } from './queryStrings.js';
import { registerAccountRoutes } from './routes/account.js';
import { registerApiDocRoutes } from './routes/apiDocs.js';
import { registerCollectionRoutes } from './routes/collections.js';
import { registerDocumentRoutes } from './routes/documents.js';
import { registerIndexRoutes } from './routes/indexes.js';
import { registerKeyRoutes } from './routes/keys.js';
import { type OperationsParts, registerOperationRoutes } from './routes/operations.js';
import { registerPlanRoutes } from './routes/plans.js';
import { registerSchemaRoutes } from './routes/schemas.js';
import { registerServiceIndexRoute } from './routes/serviceIndex.js';
import { createSessionDataRouter } from './routes/sessionData.js';
import { registerStreamRoutes, registerStreamTicketRoutes } from './routes/streams.js';
import { registerTransferRoutes } from './routes/transfer.js';
import { registerTrashRoutes } from './routes/trash.js';
import { registerWebhookRoutes } from './routes/webhooks.js';
import { type AppRouters, beforeRoute, routeByFirstSegment } from './routing.js';
import type { FolioContext, FolioRouter, FolioState } from './types.js';

/** Without `operations` (tools that only read the routes): never ready, no metrics. */
const NO_OPERATIONS: OperationsParts = { readiness: new Readiness(null), metrics: null, metricsToken: '' };

export function createApp(
  services: Services,
  logger: Logger,
  operations: OperationsParts = NO_OPERATIONS,
  /** Where the access log's lines go (the logger's own stream); none without it. */
  accessLines: DestinationStream | null = null,
): Koa<FolioState, FolioContext> {
  // X-Forwarded-* are believed only behind a proxy (FOLIO_HTTP_TRUST_PROXY): otherwise any client
  // could pick its address (sign-in throttles), host and scheme (the CSRF origin check). Behind
  // one, the client is the last X-Forwarded-For entry, the one the proxy added.
  const app = new Koa<FolioState, FolioContext>({
    proxy: services.config.http.trustProxy,
    maxIpsCount: 1,
  });
  app.context.services = services;
  shareParsedQueries(app);
  defineRequestLog(app.context, logger);
  // Errors are answered by errorHandler; Koa's own handler would only log them twice.
  app.silent = true;

  app.use(requestId());
  if (operations.metrics) app.use(requestMetrics(operations.metrics));
  // Before auth, so a browser's preflight (OPTIONS, no key) is answered.
  app.use(corsPolicy(services.config.cors.origin));
  // The error mapping (and the JSON 404) just inside the access log, which sees its status.
  app.use(accessLog(logger, accessLines, errorHandler()));
  app.use(routeByFirstSegment(createRouters(services, operations)));
  return app;
}

/**
 * The application's routers (routing.ts): Folio's own, and the projects' data routes. Exported for
 * tools and tests that list the routes.
 */
export function createRouters(services: Services, operations: OperationsParts = NO_OPERATIONS): AppRouters {
  const system = new Router<FolioState, FolioContext>();
  registerServiceIndexRoute(system);
  registerOperationRoutes(system, operations);
  registerAccountRoutes(system);
  registerKeyRoutes(system);
  registerCollectionRoutes(system);
  registerPlanRoutes(system);
  const openApi = openApiDocument();
  registerApiDocRoutes(system, openApi);
  // The dashboard's pages, and the data routes again for it, authenticated by session.
  const dashboard = createDashboardRouter(loadDashboardAssets());
  const sessionData = createSessionDataRouter(services.config.documents.maxBytes, openApi);
  return { own: [system, dashboard, sessionData], data: createDataRouter(services, openApi) };
}

/** `/{ns}/...`: the projects' data routes, by API key. */
function createDataRouter(services: Services, openApi: () => JsonObject): FolioRouter {
  const data = new Router<FolioState, FolioContext>();
  // In this order, before the route's own middleware (router param handlers run first), so a
  // request is refused before its body is read.
  data.param(
    'ns',
    beforeRoute(
      projectPath(), // a reserved name is never a project: 404
      authenticate(), // the Bearer API key, or the route's own credential → ctx.state.key: 401
      rateLimit(), // each keyed request counts: X-RateLimit-* headers, 429
      projectScope(), // the key's own project only: 403
      originPolicy(), // a browser page's Origin against the project's policy: 403
      readOnlyCheck(), // a read-only key on the routes that let it: 403
    ),
  );
  data.param('collection', collectionReach()); // a valid name the key's rules reach: 400, 404, 403
  // Before the document routes: `_webhooks` must not be read as a document id.
  registerWebhookRoutes(data);
  registerTransferRoutes(data);
  registerIndexRoutes(data);
  registerSchemaRoutes(data, openApi);
  registerTrashRoutes(data);
  // Before the document routes: `_stream` must not be read as a document id.
  registerStreamRoutes(data);
  registerStreamTicketRoutes(data);
  registerDocumentRoutes(data, services.config.documents.maxBytes);
  return data;
}

/**
 * The OpenAPI document as plain JSON, built on first use and shared by the routes that serve it
 * (given to them here: document.ts lists their declarations, so they cannot import it).
 */
function openApiDocument(): () => JsonObject {
  let document: JsonObject | undefined;
  return () => {
    document ??= JSON.parse(JSON.stringify(buildOpenApiDocument(FOLIO_VERSION))) as JsonObject;
    return document;
  };
}
