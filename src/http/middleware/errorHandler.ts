/**
 * Turns every failure into `{"error":{"code","message","details?"}}`, and a request no route
 * answered into a JSON 404. AppErrors carry their own status and safe message; the store's
 * StoreUnavailableError is a 503 with Retry-After; errors from Koa's body parser are mapped by
 * status, a body the client cut off is its own 4xx; anything else is a 500 whose details stay
 * in the log.
 */
import type { Middleware, ParameterizedContext } from 'koa';
import { AppError, notFound, storeUnavailable, uniqueViolation } from '../../errors.js';
import { StoreUnavailableError, UniqueIndexConflictError } from '../../store/port.js';
import { clientErrorStatus } from '../clientErrors.js';
import type { FolioContext, FolioState } from '../types.js';

type FolioCtx = ParameterizedContext<FolioState, FolioContext>;

interface HttpLikeError {
  code?: unknown;
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

/**
 * zlib failing on a body sent with a Content-Encoding it does not have: gzip and deflate errors
 * are `Z_...`, brotli's are its decoder's names (`ERR__ERROR_FORMAT_PADDING_2`, `ERR_BROTLI_...`).
 */
const DECOMPRESSION_ERROR = /^(?:Z_|ERR__ERROR_|ERR_BROTLI)/;

function fromHttpError(err: HttpLikeError): AppError | null {
  const status = err.status ?? err.statusCode;
  if (typeof err.code === 'string' && DECOMPRESSION_ERROR.test(err.code)) {
    return new AppError(400, 'invalid_body', 'Request body could not be decompressed (Content-Encoding).');
  }
  // The router meets a method it has no route for on any path (PROPFIND, TRACE, ...).
  if (status === 501) return new AppError(501, 'not_implemented', 'This HTTP method is not supported.');
  if (status === 413) return new AppError(413, 'payload_too_large', 'Request body is too large.');
  if (status === 400) {
    // The JSON parser refuses prototype keys outright (no pollution, nothing stored).
    const message = /prototype/i.test(err.message ?? '')
      ? 'The field name __proto__ is not allowed.'
      : 'Request body is not valid JSON.';
    return new AppError(400, 'invalid_body', message);
  }
  if (status === 415)
    return new AppError(415, 'unsupported_media_type', err.message ?? 'Unsupported Content-Type.');
  if (status && status >= 400 && status < 500 && err.expose) {
    return new AppError(status, 'bad_request', err.message ?? 'Bad request.');
  }
  return null;
}

/**
 * Runs the rest of the chain and answers what it leaves: a failure as its JSON error, nothing
 * answered as a JSON 404 (rather than Koa's plain-text one). A plain function, not a middleware
 * of its own: the access log calls it directly (accessLog.ts), one async step less per request.
 */
export async function answerErrors(ctx: FolioCtx, next: () => Promise<unknown>): Promise<void> {
  try {
    await next();
    if (ctx.status === 404 && ctx.body == null) throw notFound('Route');
    // A plain OPTIONS (not a CORS preflight, which corsPolicy answered): the router sets only the
    // Allow header; the API answers JSON everywhere, so the body says the same.
    if (ctx.method === 'OPTIONS' && ctx.status === 200 && !ctx.body) {
      ctx.body = { allow: (ctx.response.get('Allow') || '').split(/,\s*/).filter(Boolean) };
    }
  } catch (caught) {
    answerError(ctx, caught);
  }
}

export function errorHandler(): Middleware<FolioState, FolioContext> {
  return answerErrors;
}

/**
 * A body the route was reading was cut off: the client closed its connection, or it was
 * answered 408 at the socket (clientErrors.ts) and closed. The client's doing, not a failure of
 * the server's: counted as what it was answered (408), or as a bad request, and not logged as
 * an error (the access line records it).
 */
function bodyCutOff(ctx: FolioCtx, caught: unknown): AppError | null {
  if ((caught as HttpLikeError | null)?.code !== 'ECONNRESET' || !ctx.req.readableAborted) return null;
  if (clientErrorStatus(ctx.res) === 408) {
    return new AppError(
      408,
      'request_timeout',
      'The request body did not arrive in time; the connection is closed.',
    );
  }
  return new AppError(400, 'bad_request', 'The request body was cut off (the client closed the connection).');
}

function answerError(ctx: FolioCtx, caught: unknown): void {
  const known =
    caught instanceof AppError
      ? caught
      : caught instanceof StoreUnavailableError
        ? storeUnavailable(caught)
        : caught instanceof UniqueIndexConflictError
          ? uniqueViolation(caught.index, caught.conflictingId)
          : (bodyCutOff(ctx, caught) ?? fromHttpError(caught as HttpLikeError));
  // The database's state, not a bug: logged for operators, answered 503 with Retry-After.
  if (caught instanceof StoreUnavailableError) ctx.log?.warn({ err: caught }, 'store unavailable');
  const error =
    known ?? new AppError(500, 'internal_error', 'Something went wrong on our side; it has been logged.');
  if (!known) ctx.log?.error({ err: caught }, 'unhandled error');
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers ?? {})) ctx.set(name, value);
  ctx.body = {
    error: {
      code: error.code,
      message: error.message,
      ...(error.details ? { details: error.details } : {}),
    },
  };
}
