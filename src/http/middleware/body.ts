/**
 * Request bodies: the Content-Type must be one the route accepts (415 otherwise, naming them),
 * then koa-body parses it within the size limit (413 beyond). Parsing is not strict so that a
 * non-object JSON body reaches the service and gets a precise 400.
 */
import type { Middleware } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { badRequest, unsupportedMediaType } from '../../errors.js';
import { MAX_DEPTH, nestsDeeperThan } from '../../services/documentRules.js';
import type { FolioContext, FolioState } from '../types.js';

export const JSON_TYPE = 'application/json';
export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
export const JSON_PATCH_TYPE = 'application/json-patch+json';

/**
 * Any JSON body may nest a document's 64 levels plus the two levels of a JSON patch's envelope
 * (array → operation → value). Checked right after parsing, before any code walks the body
 * recursively (merge patches, the patch library, JSON.stringify), so depth can never overflow
 * the stack; the services then hold documents and patch values to exactly 64.
 */
export const MAX_BODY_DEPTH = MAX_DEPTH + 2;

export interface JsonBodyOptions {
  /**
   * `refuse` (default): a `__proto__` key anywhere makes the whole body a 400, as the JSON parser
   * finds it. `keep`: parsed as an own data property (JSON.parse never sets a prototype), for a
   * body holding several documents each checked alone (bulk), whose field rules refuse it there;
   * the depth too is then each document's to check.
   */
  protoKeys?: 'refuse' | 'keep';
}

export function jsonBody(
  accepted: readonly string[],
  limitBytes: number,
  options: JsonBodyOptions = {},
): Middleware<FolioState, FolioContext> {
  const keep = options.protoKeys === 'keep';
  const parse = koaBody({
    json: !keep,
    jsonStrict: false,
    jsonTypes: [...accepted],
    jsonLimit: limitBytes,
    // Kept: read as text (same limit, same Content-Encoding handling), parsed below.
    text: keep,
    textTypes: [...accepted],
    textLimit: limitBytes,
    urlencoded: false,
    multipart: false,
    includeUnparsed: true,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
  }) as unknown as Middleware<FolioState, FolioContext>;
  return async (ctx, next) => {
    if (!ctx.is(...accepted)) throw unsupportedMediaType(accepted);
    await parse(ctx, async () => {
      if (keep && typeof ctx.request.body === 'string') {
        const text: string = ctx.request.body;
        if (text.trim() === '') throw badRequest('Request body is empty; send a JSON document.');
        try {
          ctx.request.body = JSON.parse(text);
        } catch {
          throw badRequest('Request body is not valid JSON.');
        }
      }
      // co-body reads an empty body as {}; a missing body is a client mistake, say so.
      const raw = (ctx.request.body as Record<symbol, unknown> | undefined)?.[Symbol.for('unparsedBody')];
      if (typeof raw === 'string' && raw.trim() === '')
        throw badRequest('Request body is empty; send a JSON document.');
      // Kept bodies hold several documents: each is held to the depth alone (services/bulk.ts),
      // and JSON.parse and the envelope's parse walk none of them recursively.
      if (!keep && nestsDeeperThan(ctx.request.body, MAX_BODY_DEPTH)) {
        throw badRequest(`Request body nests deeper than ${MAX_DEPTH} levels.`, { maxDepth: MAX_DEPTH });
      }
      await next();
    });
  };
}
