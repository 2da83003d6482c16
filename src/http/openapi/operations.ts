/**
 * Operations not yet declared beside their route. Every route of Folio is declared in its route
 * module with `declare` and registered with `route` (routes/route.ts), which is how the router's
 * checks and this document stay one thing; `PATHS` only keeps the old form working while a branch
 * written before that is merged: port each entry to a declaration beside its route (move the
 * summary, parameters and responses into `declare({...})`, add an `operationId`, register the
 * handler with `route(router, op, ...)` and list the declaration in the module's `*_OPERATIONS`),
 * then delete it here. Until then `test/http/openapi.test.ts` names its route as registered
 * without a declaration.
 */
import type { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import { rateLimitHeaders, requestIdHeader } from './components.js';
import { errors, type Responses } from './declare.js';

export { errors, json } from './declare.js';

/** An operation on `/{ns}/...` in the old form: Bearer API key, rate-limit headers on every answer. */
export function keyed(
  op: Omit<ZodOpenApiOperationObject, 'responses'> & { ok: Responses; errors: number[] },
): ZodOpenApiOperationObject {
  const { ok, errors: statuses, ...rest } = op;
  const withHeaders: Responses = {};
  for (const [status, response] of Object.entries(ok)) {
    withHeaders[status] = {
      ...response,
      headers: rateLimitHeaders
        .extend(requestIdHeader.shape)
        .extend((response.headers as z.ZodObject | undefined)?.shape ?? {}),
    };
  }
  return {
    security: [{ apiKey: [] }],
    ...rest,
    responses: { ...withHeaders, ...errors([400, 401, 403, 406, 429, 500, ...statuses], { keyed: true }) },
  };
}

/** An operation on `/api/...` in the old form, authenticated by a session (cookie or Bearer). */
export function session(
  op: Omit<ZodOpenApiOperationObject, 'responses'> & { ok: Responses; errors: number[] },
): ZodOpenApiOperationObject {
  const { ok, errors: statuses, ...rest } = op;
  return {
    security: [{ session: [] }, { sessionCookie: [] }],
    ...rest,
    responses: { ...ok, ...errors([400, 401, 403, 406, 500, ...statuses]) },
  };
}

/** Old-form operations awaiting their port (see above); empty once every branch is merged. */
export const PATHS: ZodOpenApiPathsObject = {};
