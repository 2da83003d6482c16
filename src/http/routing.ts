/**
 * Which routers a request meets. Folio's own routes (account, keys, dashboard, docs, health,
 * metrics) all live under reserved first path segments, which no project may take as its name;
 * every other first segment is a project. So a request runs one side's routers only: a data
 * request does not test its path against the dozens of account and dashboard routes first.
 */
import type { Router, RouterContext } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import compose from 'koa-compose';
import { RESERVED_PROJECT_NAMES } from '../services/accounts.js';
import type { FolioContext, FolioState } from './types.js';

/** The context the routers' own middleware (routes, allowedMethods) is typed for. */
type RoutedContext = ParameterizedContext<FolioState, RouterContext<FolioState, FolioContext>>;
type RoutedMiddleware = Middleware<FolioState, RouterContext<FolioState, FolioContext>>;

/** One side: its routers (for tools that list routes) and the middleware that runs them. */
export interface RouteGroup {
  routers: Router<FolioState, FolioContext>[];
  middleware: RoutedMiddleware[];
}

/** The first segment of a path (`/acme/items/1` → `acme`; `/` → ``). */
export function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return path.slice(1, end === -1 ? path.length : end);
}

/**
 * Whether the path belongs to Folio's own routes. Case-insensitive, as the routers match paths:
 * `/API/keys` is an account route, never a project called `API`.
 */
export function isOwnPath(path: string): boolean {
  return RESERVED_PROJECT_NAMES.has(firstSegment(path).toLowerCase());
}

const GROUPS = Symbol('routeGroups');

type Dispatcher = RoutedMiddleware & { [GROUPS]: RouteGroup[] };

export function routeByFirstSegment(own: RouteGroup, projects: RouteGroup): RoutedMiddleware {
  const ownChain = compose(own.middleware);
  const projectChain = compose(projects.middleware);
  const dispatch = ((ctx: RoutedContext, next: () => Promise<unknown>) =>
    isOwnPath(ctx.path) ? ownChain(ctx, next) : projectChain(ctx, next)) as Dispatcher;
  dispatch[GROUPS] = [own, projects];
  return dispatch;
}

/** Every router an application built with `routeByFirstSegment` serves (route listings, tests). */
export function routersOf(middleware: readonly unknown[]): Router<FolioState, FolioContext>[] {
  return middleware.flatMap((m) =>
    typeof m === 'function' && GROUPS in m ? (m as Dispatcher)[GROUPS].flatMap((group) => group.routers) : [],
  );
}
