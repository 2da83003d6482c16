/**
 * The throughput workloads (GET by id, POST create, PATCH merge, a filtered list and a count over
 * 100,000 rows) as autocannon targets on each system: Folio, raw better-sqlite3 on its own
 * table, and raw better-sqlite3 writing Folio's rows. Parse Server's are in parseServer.ts.
 */
import type autocannon from 'autocannon';
import { BODY, categoryCycle, PAGE } from './rows.js';

export const RAW = 'raw better-sqlite3';
/** raw better-sqlite3 writing the rows Folio writes (bench/workloads/rawSqlite.ts, `/rows`). */
export const RAW_ROWS = "raw better-sqlite3, Folio's rows";
/** Folio through keys whose rule has a filter every document passes (issue 45's cost). */
export const RESTRICTED = 'Folio, restricted key';
/** That rule: the collections of the GET and list workloads, `n` (a field of every row) ≥ 0. */
export const RESTRICTING_RULES = [
  { collections: ['items', 'big'], access: 'write', filter: { n: { gte: 0 } } },
];
export const WORKLOADS = {
  get: 'GET by id',
  post: 'POST create',
  patch: 'PATCH merge',
  list: `filtered list, sort, limit ${PAGE}`,
  count: 'count',
} as const;

export interface Target {
  system: string;
  workload: string;
  options: autocannon.Options;
  /** The processes whose CPU is the server's (Parse Server: node and PostgreSQL's); else the listener. */
  cpuPids?: () => Promise<number[]>;
}

/**
 * A merge patch that changes the document every time (`n` counts up): SQLite commits an UPDATE
 * that leaves a row as it was without writing a page or syncing, so a constant patch measured a
 * read, not a write.
 */
let patches = 0;
export const patchBody = (): string => JSON.stringify({ n: ++patches, price: 13.5 });

/** A target whose path (and body, headers) autocannon asks for again on every request. */
export function target(
  system: string,
  workload: string,
  url: string,
  method: 'GET' | 'POST' | 'PATCH' | 'PUT',
  path: () => string,
  options: { headers?: () => Record<string, string>; body?: () => string; contentType?: string } = {},
): Target {
  return {
    system,
    workload,
    options: {
      url,
      requests: [
        {
          method,
          body: options.body?.(),
          setupRequest: (request) => {
            request.path = path();
            const headers = options.headers?.() ?? {};
            if (options.body) {
              request.body = options.body();
              headers['content-type'] = options.contentType ?? 'application/json';
            }
            request.headers = headers;
            return request;
          },
        },
      ],
    },
  };
}

/** Cycles through `items`, one per call. */
export function cycle<T>(items: readonly T[]): () => T {
  let i = 0;
  return () => items[i++ % items.length] as T;
}

const body = () => JSON.stringify(BODY);

/** Folio's five workloads: a key of the pool per request, its documents in turn. */
export function folioTargets(url: string, nextKey: () => string, ids: readonly string[]): Target[] {
  const headers = () => ({ authorization: `Bearer ${nextKey()}` });
  const nextId = cycle(ids);
  const category = categoryCycle();
  const get = (workload: string, path: () => string) =>
    target('Folio', workload, url, 'GET', path, { headers });
  return [
    get(WORKLOADS.get, () => `/bench/items/${nextId()}`),
    target('Folio', WORKLOADS.post, url, 'POST', () => '/bench/items', { headers, body }),
    target('Folio', WORKLOADS.patch, url, 'PATCH', () => `/bench/items/${nextId()}`, {
      headers,
      body: patchBody,
      contentType: 'application/merge-patch+json',
    }),
    get(WORKLOADS.list, () => `/bench/big?filter[category]=${category()}&sort=price&limit=${PAGE}`),
    get(WORKLOADS.count, () => `/bench/big?count=true&filter[category]=${category()}`),
  ];
}

/** raw better-sqlite3's five workloads on its own tables, and its writes of Folio's rows. */
export function rawTargets(url: string, items: number): Target[] {
  const nextId = cycle(Array.from({ length: items }, (_, i) => i + 1));
  const category = categoryCycle();
  return [
    target(RAW, WORKLOADS.get, url, 'GET', () => `/items/${nextId()}`),
    target(RAW, WORKLOADS.post, url, 'POST', () => '/items', { body }),
    target(RAW, WORKLOADS.patch, url, 'PATCH', () => `/items/${nextId()}`, { body: patchBody }),
    target(RAW, WORKLOADS.list, url, 'GET', () => `/big?category=${category()}&limit=${PAGE}`),
    target(RAW, WORKLOADS.count, url, 'GET', () => `/big/count?category=${category()}`),
    target(RAW_ROWS, WORKLOADS.post, url, 'POST', () => '/rows/items', { body }),
    target(RAW_ROWS, WORKLOADS.patch, url, 'PATCH', () => `/rows/items/${nextId()}`, { body: patchBody }),
  ];
}
