/**
 * Every response a test server sends is checked against the OpenAPI document: the status must be
 * one the operation lists, every required header present and of its schema, the Content-Type one
 * the response declares, and a JSON body valid against its schema (Ajv, JSON Schema 2020-12, as
 * OpenAPI 3.1 uses). Streamed answers (event streams, exports other than JSON) are checked for
 * status and headers only. Violations are collected here; contractHooks.ts fails the test that
 * produced them.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { buildOpenApiDocument } from '../../src/http/openapi/document.js';
import { FOLIO_VERSION } from '../../src/version.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON walked by key
type Json = any;

/**
 * Violations not yet reported, as `METHOD path → status: what`. Kept on globalThis: mocha loads
 * the root hooks as CommonJS and the suites as ES modules, two instances of this module.
 */
const SHARED = Symbol.for('folio.contractViolations');
const holder = globalThis as unknown as { [SHARED]?: string[] };
holder[SHARED] ??= [];
export const violations: string[] = holder[SHARED];

/** Bodies past this size are not buffered for validation (exports, large imports). */
const MAX_CHECKED_BYTES = 4 * 1024 * 1024;

interface Route {
  template: string;
  pattern: RegExp;
  literals: number;
  item: Json;
}

export interface ObservedResponse {
  method: string;
  url: string;
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  /** The body's text when it was buffered (JSON under MAX_CHECKED_BYTES), else null. */
  body: string | null;
}

export class ContractChecker {
  readonly document: Json;
  readonly #routes: Route[];
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<object, ValidateFunction>();

  constructor(document: Json = JSON.parse(JSON.stringify(buildOpenApiDocument(FOLIO_VERSION)))) {
    this.document = document;
    this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
    addFormats(this.#ajv);
    this.#ajv.addSchema({ $id: 'folio-openapi', components: document.components ?? {} });
    this.#routes = Object.entries<Json>(document.paths).map(([template, item]) => {
      const segments = template.split('/').slice(1);
      const pattern = new RegExp(
        `^/${segments.map((s) => (s.startsWith('{') ? '[^/]+' : escapeRegex(s))).join('/')}/?$`,
        'i',
      );
      return { template, pattern, literals: segments.filter((s) => !s.startsWith('{')).length, item };
    });
    // The most literal template first: `/{ns}/{collection}/_indexes` before `/{ns}/{collection}/{id}`.
    this.#routes.sort((a, b) => b.literals - a.literals);
  }

  /** What is wrong with a response, as sentences; empty when it conforms. */
  check(res: ObservedResponse): string[] {
    const method = res.method.toLowerCase();
    // Preflights and HEAD are answered by CORS and Koa for every route alike.
    if (method === 'options' || method === 'head') return [];
    const path = res.url.split('?')[0] ?? '/';
    // The most literal template the path matches is the one it belongs to (`/api/keys/{keyId}`,
    // not `/{ns}/{collection}/{id}`), whether or not it has this method.
    const route = this.#routes.find((r) => r.pattern.test(path));
    if (!route?.item[method]) {
      // No documented operation: an unknown route or method, answered with the error shape.
      const expected = route ? [405, 501] : [404, 405, 501, 400];
      if (!expected.includes(res.status)) return [`undocumented operation answered ${res.status}`];
      return this.#checkBody({ content: { 'application/json': { schema: errorRef() } } }, res);
    }
    const operation = route.item[method];
    const given = operation.responses[String(res.status)] ?? operation.responses.default;
    if (!given) {
      return [`status ${res.status} is not among ${route.template}'s (${Object.keys(operation.responses)})`];
    }
    const response = this.#deref(given);
    return [...this.#checkHeaders(response, res), ...this.#checkBody(response, res)];
  }

  #deref(value: Json): Json {
    let current = value;
    while (current?.$ref) {
      const [, ...parts] = String(current.$ref).split('/');
      current = parts.reduce(
        (node: Json, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')],
        this.document,
      );
    }
    return current;
  }

  #checkHeaders(response: Json, res: ObservedResponse): string[] {
    const problems: string[] = [];
    for (const [name, given] of Object.entries<Json>(response.headers ?? {})) {
      const header = this.#deref(given);
      const raw = res.headers[name.toLowerCase()];
      if (raw === undefined) {
        if (header.required) problems.push(`required header ${name} is missing`);
        continue;
      }
      const text = Array.isArray(raw) ? raw.join(', ') : String(raw);
      const schema = header.schema ?? {};
      const value = schema.type === 'integer' || schema.type === 'number' ? Number(text) : text;
      const validate = this.#validator(schema);
      if (!validate(value))
        problems.push(`header ${name}: '${text}' ${this.#ajv.errorsText(validate.errors)}`);
    }
    return problems;
  }

  #checkBody(response: Json, res: ObservedResponse): string[] {
    const content: Record<string, Json> | undefined = response.content;
    if (!content || res.status === 204 || res.status === 304) return [];
    const type = String(res.headers['content-type'] ?? '')
      .split(';')[0]!
      .trim()
      .toLowerCase();
    const media = content[type];
    if (!media) return [`Content-Type '${type}' is not among the response's (${Object.keys(content)})`];
    const isJson = type === 'application/json' || type.endsWith('+json');
    if (!isJson || res.body === null || !media.schema) return [];
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      return [`the body is not JSON: ${JSON.stringify(res.body.slice(0, 120))}`];
    }
    const validate = this.#validator(media.schema);
    if (validate(body)) return [];
    const errors = (validate.errors ?? []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`);
    return [`body: ${errors.join('; ')}`];
  }

  #validator(schema: Json): ValidateFunction {
    let validate = this.#compiled.get(schema);
    if (!validate) {
      validate = this.#ajv.compile(rebase(schema));
      this.#compiled.set(schema, validate);
    }
    return validate;
  }

  /** Watch every response `server` sends; violations land in `violations`. */
  watch(server: Server): void {
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => this.#observe(req, res));
  }

  #observe(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk == null || typeof chunk === 'function' || size > MAX_CHECKED_BYTES) return;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += buffer.length;
      if (size <= MAX_CHECKED_BYTES) chunks.push(buffer);
    };
    const write = res.write;
    const end = res.end;
    res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as ServerResponse['write'];
    res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
      keep(chunk, rest[0]);
      return (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest);
    } as ServerResponse['end'];
    let done = false;
    const settle = () => {
      if (done || !res.headersSent) return;
      done = true;
      const type = String(res.getHeader('content-type') ?? '');
      const observed: ObservedResponse = {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        status: res.statusCode,
        headers: res.getHeaders() as ObservedResponse['headers'],
        // A response cut off by a closed connection has no whole body to check, nor one whose
        // request broke off (a framing error answered on the socket by clientErrors.ts).
        body:
          res.writableFinished &&
          (req.complete || size > 0) &&
          type.includes('json') &&
          size <= MAX_CHECKED_BYTES
            ? Buffer.concat(chunks).toString('utf8')
            : null,
      };
      for (const problem of this.check(observed)) {
        violations.push(`${observed.method} ${observed.url.slice(0, 200)} → ${observed.status}: ${problem}`);
      }
    };
    res.once('finish', settle);
    // An event stream ends when the connection does; its status and headers are still checked.
    res.once('close', settle);
  }
}

function errorRef(): Json {
  return { $ref: '#/components/schemas/Error' };
}

/** The document's `#/components/...` references, resolved against the schema Ajv holds them in. */
function rebase(schema: Json): Json {
  return JSON.parse(JSON.stringify(schema), (key, value) =>
    key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `folio-openapi${value}` : value,
  );
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

let shared: ContractChecker | undefined;

/** One checker per process: compiling the document's schemas once is what keeps this cheap. */
export function contractChecker(): ContractChecker {
  shared ??= new ContractChecker();
  return shared;
}
