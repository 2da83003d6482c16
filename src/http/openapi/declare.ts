/**
 * One declaration per operation, written beside its route: method, path, operationId, request
 * (path, query, headers, body) and responses (statuses, headers, bodies). The router validates
 * requests from it (routes/route.ts: the query's parameter names, `Accept`, the body's media
 * types and, when declared, its schema) and the OpenAPI document is generated from it
 * (document.ts), so neither can say something the other does not.
 */
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiResponseObject } from 'zod-openapi';
import type { KeyContext } from '../../services/context.js';
import type { Ctx } from '../types.js';
import {
  errorCodesOf,
  errorSchema,
  rateLimitHeaders,
  rateLimitHeadersIfKeyed,
  requestIdHeader,
} from './components.js';

export type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';

/**
 * Who may call: an API key (`/{ns}/...`, rate-limit headers on every answer, 401 and 429
 * possible), a session (`/api/...`), the metrics token, or anyone (`security: []`).
 */
export type Auth = 'key' | 'session' | 'metrics' | 'public';

/** Responses by status code. */
export type Responses = Record<string, ZodOpenApiResponseObject>;

export interface RequestBody {
  /** Media type → schema, as OpenAPI shows them; the Content-Types the route takes (415 otherwise). */
  content: Record<string, { schema: z.ZodType }>;
  /**
   * The schema the router validates the parsed body with (400 `invalid_body` naming the field),
   * when the route itself does not pass the body to a service that checks it more precisely.
   */
  validate?: z.ZodType;
}

export interface OperationDeclaration {
  method: Method;
  /** OpenAPI form (`/{ns}/{collection}/{id}`); the router's `:param` form is derived from it. */
  path: string;
  /** Stable: generated clients name their methods after it. Never change one that shipped. */
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: Auth;
  /**
   * `key` routes: a credential the route takes in place of `Authorization` (a stream's ticket:
   * a browser's EventSource cannot send headers), as the key it stands for; null when the
   * request carries none, and the request then needs its Bearer key.
   */
  credential?: (ctx: Ctx) => Promise<KeyContext> | null;
  /** `key` routes: whether a read-only key may call it (default: GET routes, which only read). */
  readOnlyKeys?: boolean;
  /**
   * `/{ns}/{collection}/...` routes: the access a key's rules must give it on the collection
   * (default: `read` where a read-only key may call the route, `write` elsewhere; `every
   * document`: write with no rule filter, for routes that send the collection elsewhere).
   */
  collectionAccess?: 'read' | 'write' | 'every document';
  params?: z.ZodObject;
  /**
   * Every query parameter the route takes; any other is answered 400 `invalid_query` naming it.
   * A parameter whose schema has `param.style: 'deepObject'` (filter) takes `name[...]` keys.
   */
  query?: z.ZodObject;
  headers?: z.ZodObject;
  body?: RequestBody;
  /** Successful answers (and any non-error status such as 304, 308). */
  ok: Responses;
  /** Error statuses the route can answer besides the ones its `auth` brings (401, 429...). */
  errors: number[];
}

/** The answers besides `ok` every operation of an `auth` can give. */
const AUTH_ERRORS: Record<Auth, number[]> = {
  key: [401, 403, 404, 406, 429],
  session: [401, 403, 406],
  metrics: [401, 406],
  public: [406],
};

/** Every operation may answer these (bad query parameter names, bad framing, a bug). */
const COMMON_ERRORS = [400, 500];

const SECURITY: Record<Auth, ZodOpenApiOperationObject['security']> = {
  key: [{ apiKey: [] }],
  session: [{ session: [] }, { sessionCookie: [] }],
  metrics: [{ metricsToken: [] }],
  public: [],
};

/**
 * One registered response per error status (and per header set), so the document and the typed
 * client refer to `components.responses` instead of repeating each error response.
 */
const errorResponses = new Map<string, ZodOpenApiResponseObject>();

export function errors(statuses: number[], options: { keyed?: boolean } = {}): Responses {
  const out: Responses = {};
  for (const status of [...new Set(statuses)].sort()) {
    const id = options.keyed ? `KeyedError${status}` : `Error${status}`;
    let response = errorResponses.get(id);
    if (!response) {
      const extra: Record<string, z.ZodType> = {};
      if (status === 401) Object.assign(extra, wwwAuthenticate.shape);
      if (status === 429) Object.assign(extra, retryAfter.shape);
      // A 401 answers a request without a valid key: there is no key whose rate limit to show;
      // a 404 or 500 may come before the key was checked.
      const limits = status === 404 || status === 500 ? rateLimitHeadersIfKeyed : rateLimitHeaders;
      const headers = options.keyed && status !== 401 ? limits.extend(extra) : null;
      response = {
        id,
        description: errorCodesOf(status),
        content: { 'application/json': { schema: errorSchema } },
        headers: (headers ?? requestIdHeader.extend(extra)).extend(requestIdHeader.shape),
      };
      errorResponses.set(id, response);
    }
    out[String(status)] = response;
  }
  return out;
}

const wwwAuthenticate = z.object({
  'WWW-Authenticate': z
    .string()
    .meta({ description: '`Bearer`: the credential to send.', header: { id: 'WWWAuthenticate' } }),
});
const retryAfter = z.object({
  'Retry-After': z
    .string()
    .optional()
    .meta({ description: 'Seconds to wait before retrying.', header: { id: 'RetryAfter' } }),
});

export const json = (schema: z.ZodType) => ({ 'application/json': { schema } });

/** A JSON request body the router validates with `schema` (400 `invalid_body` naming the field). */
export const validatedJson = <S extends z.ZodType>(schema: S) => ({
  content: json(schema),
  validate: schema,
});

/** A successful answer by its status: its description, and its JSON body and headers when it has them. */
export function answer(
  status: number,
  description: string,
  schema?: z.ZodType,
  headers?: z.ZodObject,
): Responses {
  return {
    [String(status)]: {
      description,
      ...(schema ? { content: json(schema) } : {}),
      ...(headers ? { headers } : {}),
    },
  };
}

/** The OpenAPI operation object of a declaration. */
export function toOperation(op: OperationDeclaration): ZodOpenApiOperationObject {
  const keyed = op.auth === 'key';
  const responses: Responses = {};
  for (const [status, response] of Object.entries(op.ok)) {
    const own = (response.headers as z.ZodObject | undefined)?.shape ?? {};
    const base = keyed ? rateLimitHeaders.extend(requestIdHeader.shape) : requestIdHeader;
    responses[status] = { ...response, headers: base.extend(own) };
  }
  Object.assign(responses, errors([...COMMON_ERRORS, ...AUTH_ERRORS[op.auth], ...op.errors], { keyed }));
  const requestParams: ZodOpenApiOperationObject['requestParams'] = {
    ...(op.params ? { path: op.params } : {}),
    ...(op.query ? { query: op.query } : {}),
    ...(op.headers ? { header: op.headers } : {}),
  };
  return {
    operationId: op.operationId,
    tags: op.tags,
    summary: op.summary,
    ...(op.description ? { description: op.description } : {}),
    security: SECURITY[op.auth],
    ...(Object.keys(requestParams).length > 0 ? { requestParams } : {}),
    ...(op.body ? { requestBody: { required: true, content: op.body.content } } : {}),
    responses,
  };
}

/** The media types a successful answer can take: what `Accept` must allow (406 otherwise). */
export function answerTypes(op: OperationDeclaration): string[] {
  const types = new Set<string>();
  for (const [status, response] of Object.entries(op.ok)) {
    if (!status.startsWith('2')) continue;
    for (const type of Object.keys(response.content ?? {})) types.add(type);
  }
  return [...types];
}

/** The query parameter names a route takes, and the deepObject families (`filter[...]`). */
export function queryNames(op: OperationDeclaration): { names: Set<string>; families: Set<string> } {
  const names = new Set<string>();
  const families = new Set<string>();
  for (const [name, schema] of Object.entries(op.query?.shape ?? {})) {
    const meta = (schema as z.ZodType).meta() as { param?: { style?: string } } | undefined;
    (meta?.param?.style === 'deepObject' ? families : names).add(name);
  }
  return { names, families };
}

/** `/{ns}/{collection}` → `/:ns/:collection` (the router's form). */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** The Content-Types the declared body takes: what the route's body parser accepts (415 otherwise). */
export function bodyTypes(op: OperationDeclaration): string[] {
  return Object.keys(op.body?.content ?? {});
}
