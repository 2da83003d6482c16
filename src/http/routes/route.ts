/**
 * Registers a route from its declaration (openapi/declare.ts): the router's path and the checks
 * every route makes come from the same object the OpenAPI document is generated from.
 *
 *   export const readThing = declare({ method: 'get', path: '/api/things/{id}', operationId: 'readThing', ... });
 *   route(router, readThing, async (ctx) => { ... });
 *
 * A `session` operation gets the session check first (401, or 403 `csrf_failed`). Then, before
 * the route's own middleware: 406 when `Accept` allows none of the declared answer types,
 * 400 `invalid_query` naming every query parameter the declaration does not list. Just before
 * the handler (after a body parser passed as middleware): the body's schema, when declared with
 * `validate`, with the parsed value left in `ctx.request.body` (read it with `bodyOf`).
 */
import type { z } from 'zod';
import { AppError, notAcceptable } from '../../errors.js';
import { sessionAuth } from '../middleware/sessionAuth.js';
import { answerTypes, type OperationDeclaration, queryNames, routerPath } from '../openapi/declare.js';
import type { Ctx, FolioRouter, RouteMiddleware } from '../types.js';
import { recordDeclaration } from './declared.js';
import { parseBody } from './parseBody.js';

/** A declaration, its literal types kept (`bodyOf` reads the body schema's type from it). */
export function declare<const O extends OperationDeclaration>(op: O): O {
  return op;
}

export function route(router: FolioRouter, op: OperationDeclaration, ...middleware: RouteMiddleware[]): void {
  const handler = middleware.pop();
  if (!handler) throw new Error(`${op.operationId}: no handler`);
  // Authentication first, as on keyed routes (their router's `ns` param handler runs before any
  // route middleware): a request without credentials is a 401 whatever else is wrong with it.
  const chain: RouteMiddleware[] = [
    ...(op.auth === 'session' ? [sessionAuth() as RouteMiddleware] : []),
    requestChecks(op),
    ...middleware,
  ];
  const schema = op.body?.validate;
  if (schema) {
    chain.push((ctx, next) => {
      ctx.request.body = parseBody(schema, ctx.request.body) as Ctx['request']['body'];
      return next();
    });
  }
  chain.push(handler);
  recordDeclaration(op);
  const register = router[op.method] as (name: string, path: string, ...mw: RouteMiddleware[]) => unknown;
  register.call(router, op.operationId, routerPath(op.path), ...chain);
}

/** The body `route` validated with the declaration's `validate` schema. */
export function bodyOf<O extends { body?: { validate?: z.ZodType } }>(
  ctx: Ctx,
  _op: O,
): z.infer<NonNullable<NonNullable<O['body']>['validate']>> {
  return ctx.request.body as z.infer<NonNullable<NonNullable<O['body']>['validate']>>;
}

function requestChecks(op: OperationDeclaration): RouteMiddleware {
  const types = answerTypes(op);
  // `Accept` values that need no negotiation: none sent, `*/*`, or exactly a declared type (each
  // is what `ctx.accepts` would accept). Anything else is negotiated.
  const plainAccepts = new Set(['*/*', ...types]);
  const { names, families } = queryNames(op);
  const expected = [...names, ...[...families].map((f) => `${f}[...]`)];
  // Run on every request: no allocation on the common path (no Accept or a plain one, known names).
  return (ctx, next) => {
    const accept = ctx.req.headers.accept;
    if (types.length > 0 && accept !== undefined && !plainAccepts.has(accept) && !ctx.accepts(...types))
      throw notAcceptable(types);
    if (ctx.querystring !== '' && !allKnown(ctx.query, names, families)) {
      const unknown = Object.keys(ctx.query).filter((key) => !known(key, names, families));
      throw new AppError(
        400,
        'invalid_query',
        `unknown query parameter${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; ${
          expected.length > 0 ? `this route takes ${expected.join(', ')}` : 'this route takes none'
        }.`,
        { param: unknown[0]!, params: unknown },
      );
    }
    return next();
  };
}

function allKnown(query: object, names: Set<string>, families: Set<string>): boolean {
  for (const key in query) if (!known(key, names, families)) return false;
  return true;
}

function known(key: string, names: Set<string>, families: Set<string>): boolean {
  if (names.has(key)) return true;
  const bracket = key.indexOf('[');
  // The family's own name too (`filter=x`): the service answers what is wrong with it.
  return families.has(bracket === -1 ? key : key.slice(0, bracket));
}
