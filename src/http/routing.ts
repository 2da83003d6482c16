/**
 * Which routers answer a request. Folio's own routes (`GET /`, account, keys, dashboard, docs,
 * health, metrics) live under reserved first path segments, which no project may take as its
 * name; every other first segment is a project, answered by the data router. So `/api/keys` is
 * never read as project `api`, and a wrong method is answered (405) from one side's routes only.
 * Both sides are plain @koa/router routers: `routes()`, then `allowedMethods()` for 405 and 501.
 */
import type { RouterContext } from '@koa/router';
import type { Middleware, Next } from 'koa';
import compose from 'koa-compose';
import { AppError } from '../errors.js';
import { RESERVED_PROJECT_NAMES } from '../services/accounts.js';
import type { Ctx, FolioContext, FolioRouter, FolioState, RouteMiddleware } from './types.js';

/** The application's routers: Folio's own, in the order they are tried, and the projects' data. */
export interface AppRouters {
  own: FolioRouter[];
  data: FolioRouter;
}

/** The first segment of a path (`/acme/items/1` → `acme`; `/` → ``). */
export function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return path.slice(1, end === -1 ? path.length : end);
}

/**
 * Whether the path belongs to Folio's own routes: `/`, or a reserved first segment in any case,
 * as the routers match paths case-insensitively (`/API/keys` is an account route, never a
 * project called `API`).
 */
export function isOwnPath(path: string): boolean {
  return path === '/' || RESERVED_PROJECT_NAMES.has(firstSegment(path).toLowerCase());
}

/** The context the routers' own middleware (routes, allowedMethods) is typed for. */
type RouterMiddleware = Middleware<FolioState, RouterContext<FolioState, FolioContext>>;

export function routeByFirstSegment({ own, data }: AppRouters): RouterMiddleware {
  const ownRoutes = routesOf(own);
  const dataRoutes = routesOf([data]);
  return (ctx, next) => (isOwnPath(ctx.path) ? ownRoutes(ctx, next) : dataRoutes(ctx, next));
}

/**
 * Each router's routes in turn, then one allowedMethods (405, 501, OPTIONS' Allow): the routes
 * each router matched gather in `ctx.matched`, so the first router's answers for them all.
 */
function routesOf(routers: FolioRouter[]): RouterMiddleware {
  const [first] = routers;
  if (!first) throw new Error('no routers');
  const allowed = first.allowedMethods({ throw: true, methodNotAllowed });
  return compose([...routers.map((router) => router.routes()), allowed]);
}

/**
 * Middleware run as one router param handler: a router runs its param handlers before the
 * route's own middleware, and only for a route that matched the path and method.
 */
export function beforeRoute(
  ...middleware: RouteMiddleware[]
): (value: string, ctx: Ctx, next: Next) => unknown {
  const chain = compose(middleware);
  return (_value, ctx, next) => chain(ctx, next);
}

function methodNotAllowed(): Error {
  return new AppError(405, 'method_not_allowed', 'This method is not allowed on this path.');
}
