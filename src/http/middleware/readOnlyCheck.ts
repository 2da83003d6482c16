/**
 * A read-only key calls only the routes whose declaration lets it: GET (and its HEAD) by default,
 * which only read; anything else is 403 `read_only_key`.
 */
import { readOnlyKey } from '../../errors.js';
import { declarationOf } from '../routes/declared.js';
import { keyOf, type RouteMiddleware } from '../types.js';

export function readOnlyCheck(): RouteMiddleware {
  return (ctx, next) => {
    if (keyOf(ctx).key.scope === 'read-only') {
      const op = declarationOf(ctx);
      if (!(op.readOnlyKeys ?? op.method === 'get')) throw readOnlyKey();
    }
    return next();
  };
}
