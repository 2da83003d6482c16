/**
 * Parsed query strings, shared by the requests that send the same one. A client polling a list
 * or a count sends the same query string again and again, and parsing it anew (URLSearchParams,
 * then the listing's filters and paths: listQuery.ts) was a tenth of the CPU of a count answered
 * from the query cache. Koa parses `ctx.query` once per request; here once per distinct query
 * string while it stays in the memo.
 *
 * Koa parses (its own getter, so `ctx.query` is what Koa gives); the parsed object is then
 * frozen (and its arrays): requests share it, so none may change what another reads; being
 * frozen is also what lets parseListQuery keep its own parse of it.
 */
import type Koa from 'koa';
import { LRUCache } from 'lru-cache';
import { frozenThrough } from '../frozen.js';
import type { RawQuery } from '../query/filterParams.js';

/** Distinct query strings kept, and the bytes they may hold (a query string is the client's). */
export const QUERY_MEMO_ENTRIES = 1024;
export const QUERY_MEMO_BYTES = 1 << 20;

/**
 * What a parsed query string holds, approximately: its text, the decoded names and values (at
 * most as long), UTF-16 for both, and the object around them.
 */
export function parsedQueryBytes(text: string): number {
  return 4 * text.length + 256;
}

export class QueryStringMemo {
  readonly #parsed = new LRUCache<string, Readonly<RawQuery>>({
    max: QUERY_MEMO_ENTRIES,
    maxSize: QUERY_MEMO_BYTES,
    sizeCalculation: (_parsed, text) => parsedQueryBytes(text),
  });

  /** `text` parsed by `parse` (Koa's own), frozen; from the memo when it holds `text`. */
  parse(text: string, parse: (text: string) => RawQuery): Readonly<RawQuery> {
    const known = this.#parsed.get(text);
    if (known) return known;
    const parsed: Readonly<RawQuery> = frozenThrough(parse(text));
    this.#parsed.set(text, parsed);
    return parsed;
  }
}

/**
 * `ctx.query` (and `ctx.request.query`) of `app` from `memo`, each distinct query string parsed
 * by Koa's own getter (what `ctx.query` gives without the memo); setting it works as in Koa.
 */
export function shareParsedQueries<S, C>(app: Koa<S, C>, memo = new QueryStringMemo()): void {
  const request = app.request;
  const koaQuery = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(request), 'query');
  const koaGet = koaQuery?.get;
  if (!koaGet) throw new Error("Koa's request has no query getter");
  Object.defineProperty(request, 'query', {
    configurable: true,
    enumerable: true,
    get(this: Koa.Request) {
      return memo.parse(this.querystring, () => koaGet.call(this) as RawQuery);
    },
    set(this: Koa.Request, value: unknown) {
      koaQuery.set?.call(this, value);
    },
  });
}
