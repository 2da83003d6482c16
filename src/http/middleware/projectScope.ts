/**
 * `/{ns}/...` routes: the path's first segment names a project, and the key is confined to its
 * own. Folio's own first segments (services/accounts.ts) are never a project, however spelt
 * (`/%61pi/...`): 404 before any key is read. Another project's name: 403 (services/apiKeys.ts).
 */
import { notFound } from '../../errors.js';
import { RESERVED_PROJECT_NAMES } from '../../services/accounts.js';
import { keyOf, param, type RouteMiddleware } from '../types.js';

export function projectPath(): RouteMiddleware {
  return (ctx, next) => {
    if (RESERVED_PROJECT_NAMES.has(param(ctx, 'ns'))) throw notFound('Route');
    return next();
  };
}

export function projectScope(): RouteMiddleware {
  return (ctx, next) => {
    ctx.services.apiKeys.assertProject(keyOf(ctx), param(ctx, 'ns'));
    return next();
  };
}
