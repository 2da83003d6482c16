/**
 * Which routers a request meets. Folio's own routes (account, keys, dashboard, docs, health,
 * metrics) all live under reserved first path segments, which no project may take as its name;
 * every other first segment is a project. So a request runs one side's routers only: a data
 * request does not test its path against the dozens of account and dashboard routes first.
 */
import { Router, type RouterContext } from '@koa/router';
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
  const ownChain = chainOf(own.middleware);
  const projectChain = chainOf(projects.middleware);
  const dispatch = ((ctx: RoutedContext, next: () => Promise<unknown>) =>
    isOwnPath(ctx.path) ? ownChain(ctx, next) : projectChain(ctx, next)) as Dispatcher;
  dispatch[GROUPS] = [own, projects];
  return dispatch;
}

/** The middleware run in turn; a single one as is (a compose of one is a step for nothing). */
function chainOf(middleware: RoutedMiddleware[]): RoutedMiddleware {
  return middleware.length === 1 && middleware[0] ? middleware[0] : compose(middleware);
}

/** What `allowedMethods` is given (the application's 405 and 501 answers). */
type AllowedOptions = Parameters<Router<FolioState, FolioContext>['allowedMethods']>[0];

/** A layer's path, split: a literal segment (lower case), or null for a `:param`. */
type Template = (string | null)[];

/**
 * A router's routes split by the shape of the paths they can match, so a request tests its
 * path against a handful of routes rather than all of them: @koa/router tests every route's
 * pattern in turn (and logs each test through `debug`), a few per cent of a GET's CPU with the
 * data routes' three dozen. The shape of a path is its segment count and, where some route has
 * a literal segment (`_webhooks`, `versions`), that literal or "anything else". Each shape gets a
 * router holding, in the original order, every route that could match a path of that shape; it
 * still tests their patterns, so it answers exactly as the whole router would (the same routes
 * matched, the same Allow, 404, 405 and 501). A route whose path is not plain segments and
 * `:params` joins every shape.
 */
export function routeByShape(
  router: Router<FolioState, FolioContext>,
  allowed: AllowedOptions,
): RoutedMiddleware {
  const index = shapeIndex(router.stack);
  const chains = new Map<string, RoutedMiddleware>();
  const routeChains = new Map<RouteLayer, RoutedMiddleware>();
  const routeChain = (layer: RouteLayer): RoutedMiddleware => {
    let chain = routeChains.get(layer);
    if (chain === undefined) {
      chain = compose([enterRoute(layer), ...(layer.stack as RoutedMiddleware[])]);
      routeChains.set(layer, chain);
    }
    return chain;
  };
  return (ctx, next) => {
    const { key, layers } = index(ctx.path);
    let chain = chains.get(key);
    if (chain === undefined) {
      const part = new Router<FolioState, FolioContext>({ methods: router.methods });
      part.stack.push(...layers);
      chain = compose([dispatchRoute(part, routeChain), part.allowedMethods(allowed)]);
      chains.set(key, chain);
    }
    return chain(ctx, next);
  };
}

type RouteLayer = Router<FolioState, FolioContext>['stack'][number];

/**
 * What a router's `routes()` does, for the common case of one route matching the path and
 * method, with that route's middleware composed once rather than per request (@koa/router
 * builds and composes a chain for every request, and reads `ctx.host` for its host option).
 * Any other case (no route, several, a router-level middleware) is left to the router itself.
 */
function dispatchRoute(
  part: Router<FolioState, FolioContext>,
  routeChain: (layer: RouteLayer) => RoutedMiddleware,
): RoutedMiddleware {
  const routes = part.routes();
  return (ctx, next) => {
    const path = ctx.path;
    const method = ctx.method.toUpperCase();
    const matched: RouteLayer[] = [];
    let only: RouteLayer | undefined;
    let answering = 0;
    for (const layer of part.stack) {
      if (!layer.match(path)) continue;
      matched.push(layer);
      if (layer.methods.length === 0) answering = 2;
      else if (layer.methods.includes(method)) {
        answering += 1;
        only = layer;
      }
    }
    if (answering !== 1 || only === undefined || ctx.matched) return routes(ctx, next);
    ctx.matched = matched;
    ctx.router = part;
    ctx.routeMatched = true;
    return routeChain(only)(ctx, next);
  };
}

/**
 * `layer.params` for plain `:params`: each non-empty capture, percent-decoded (left as is when
 * that fails), decoding skipped for a capture with no `%` (a document id, a collection name),
 * where decodeURIComponent has nothing to do.
 */
function paramsOf(
  layer: RouteLayer,
  captures: string[],
  existing: Record<string, string> = {},
): Record<string, string> {
  const params = { ...existing };
  for (let i = 0; i < captures.length; i++) {
    const key = layer.paramNames[i];
    const value = captures[i];
    if (key && value) params[key.name] = value.includes('%') ? decodeOrKeep(value) : value;
  }
  return params;
}

function decodeOrKeep(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** What @koa/router sets before a matched route's middleware: its params and its names. */
function enterRoute(layer: RouteLayer): RoutedMiddleware {
  // Only named `:params` (no wildcard, which the router may leave out): read as paramsOf does.
  const plain = layer.paramNames.every((key) => key.type === 'param');
  return (ctx, next) => {
    const path = ctx.path;
    ctx.captures = layer.captures(path);
    ctx.request.params = plain
      ? paramsOf(layer, ctx.captures, ctx.params)
      : layer.params(path, ctx.captures, ctx.params);
    ctx.params = ctx.request.params;
    ctx.routerPath = layer.path as string;
    ctx.routerName = layer.name || undefined;
    ctx._matchedRoute = layer.path;
    if (layer.name) ctx._matchedRouteName = layer.name;
    return next();
  };
}

/** A path's shape (`key`: one per shape, a few dozen at most) and the routes that could match it. */
export interface ShapeMatch<L> {
  key: string;
  layers: L[];
}

/** For a list of routes (in order), the routes in that order that could match a given path. */
export function shapeIndex<L extends { path: string | RegExp }>(
  routes: readonly L[],
): (path: string) => ShapeMatch<L> {
  const templates = routes.map((layer) => ({ layer, template: templateOf(String(layer.path)) }));
  /** Per position, the literal segments some route has there. */
  const literals: Set<string>[] = [];
  let maxSegments = 0;
  for (const { template } of templates) {
    if (!template) continue;
    maxSegments = Math.max(maxSegments, template.length);
    template.forEach((segment, i) => {
      literals[i] ??= new Set();
      if (segment !== null) literals[i].add(segment);
    });
  }
  const longest = literals.map((names) => Math.max(0, ...[...names].map((name) => name.length)));
  const byKey = new Map<string, ShapeMatch<L>>();
  // Longer than any route (or an empty segment): only routes that are not plain segments.
  const beyond = { key: '', layers: templates.filter((t) => t.template === null).map((t) => t.layer) };
  return (path) => {
    const key = shapeOf(path, literals, maxSegments, longest);
    if (key === null) return beyond;
    let match = byKey.get(key);
    if (match === undefined) {
      const shape = key.slice(1).split('/');
      const layers = templates
        .filter(({ template }) => template === null || fits(template, shape))
        .map((t) => t.layer);
      match = { key, layers };
      byKey.set(key, match);
    }
    return match;
  };
}

/** `/:ns/:collection/_webhooks` → [null, null, '_webhooks']; null for anything but plain segments. */
export function templateOf(path: string): Template | null {
  if (!path.startsWith('/')) return null;
  const segments = path.slice(1).split('/');
  const template: Template = [];
  for (const segment of segments) {
    if (/^:\w+$/.test(segment)) template.push(null);
    else if (/^[\w.~-]+$/.test(segment)) template.push(segment.toLowerCase());
    else return null;
  }
  return template;
}

/**
 * A path's shape, as a key: per segment a '/' and the segment in lower case where some route has
 * it as a literal at that position (the routers match case-insensitively), else nothing
 * ("anything else"): `/acme/items/_WEBHOOKS` → `///_webhooks`. One trailing slash is dropped, as
 * the routers allow it. Null for a path no plain route can match: an empty segment (a `:param`
 * needs at least one character), or more segments than any route. `longest`: per position, the
 * longest literal there (a longer segment, such as a document id, is not looked up).
 */
export function shapeOf(
  path: string,
  literals: readonly Set<string>[],
  maxSegments: number,
  longest: readonly number[] = [],
): string | null {
  const end = path.length > 1 && path.endsWith('/') ? path.length - 1 : path.length;
  let key = '';
  let position = 0;
  let start = 1;
  while (start <= end) {
    let stop = path.indexOf('/', start);
    if (stop === -1 || stop > end) stop = end;
    if (stop === start || position === maxSegments) return null;
    key += '/';
    const names = literals[position];
    if (names && names.size > 0 && stop - start <= (longest[position] ?? Number.POSITIVE_INFINITY)) {
      const lower = path.slice(start, stop).toLowerCase();
      if (names.has(lower)) key += lower;
    }
    position += 1;
    start = stop + 1;
  }
  return key;
}

/** Whether a route of this template could match a path of this shape (its key's segments). */
function fits(template: Template, shape: readonly string[]): boolean {
  if (template.length !== shape.length) return false;
  return template.every((segment, i) => segment === null || segment === shape[i]);
}

/** Every router an application built with `routeByFirstSegment` serves (route listings, tests). */
export function routersOf(middleware: readonly unknown[]): Router<FolioState, FolioContext>[] {
  return middleware.flatMap((m) =>
    typeof m === 'function' && GROUPS in m ? (m as Dispatcher)[GROUPS].flatMap((group) => group.routers) : [],
  );
}
