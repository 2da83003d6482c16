/**
 * The peer bench's workloads beyond GET and POST: PATCH merge, a filtered list with sort and
 * limit over 100,000 rows, and a count over them, on every system that has an equivalent
 * endpoint, plus the raw better-sqlite3 server (bench/workloads/rawSqlite.ts) on GET and POST.
 * A system without an equivalent gets no target; the report writes "n/a" for it.
 */
import type { Server, Target } from '../peers.js';
import { BODY, categoryCycle, PAGE } from './rows.js';

/** raw better-sqlite3 writing Folio's rows (bench/workloads/rawSqlite.ts, `/rows`). */
export const RAW_ROWS = 'raw better-sqlite3, same rows';
/**
 * Folio with its query cache off (`FOLIO_EMBEDDED_QUERY_CACHE_MB=0`): every list page and count
 * asks SQLite, as on a collection written between two reads. The workloads repeat their
 * queries over an unwritten collection, so Folio's own rows are the cache's hits.
 */
export const FOLIO_UNCACHED = 'Folio, no query cache';

const LIST = `filtered list, sort, limit ${PAGE}`;
const COUNT = 'count';
/**
 * The same page without `meta.total` (Folio's documented `total=none`): the same storage work
 * as raw better-sqlite3's page, which computes no total. The list row keeps the default.
 */
const LIST_NO_TOTAL = `${LIST}, no total`;

/**
 * A merge patch that changes the document every time (`n` counts up). A constant patch is a
 * no-op from its second application on, and SQLite commits an UPDATE that leaves a row as it
 * was without writing a page or syncing: raw better-sqlite3's PATCH then measured a read,
 * not a write (10,500 req/s against 295 for its POST, on one run of 2026-11-26).
 */
let patches = 0;
export const patchBody = (): string => JSON.stringify({ n: ++patches, price: 13.5 });

export interface WorkloadServers {
  bare: Server;
  folio: Server;
  raw: Server | null;
  jsonServer: Server | null;
  /** json-server over the 100,000-row `big` collection (its own process and db file). */
  jsonBig: Server | null;
  pouch: Server | null;
  /** A second Folio, query cache off, over the same 100,000 rows (FOLIO_UNCACHED). */
  folioUncached: { server: Server; nextKey: () => string } | null;
  /** Folio: a key from the pool for each request, a document id in turn. */
  nextKey: () => string;
  nextId: () => string;
  /** json-server, pouchdb-server and raw SQLite ids 1..1000, in turn. */
  nextNumber: () => number;
}

const json = { 'content-type': 'application/json' };

/** A target whose path (and, for Folio, key) changes with every request. */
function varying(
  name: string,
  system: Target['system'],
  workload: string,
  url: string,
  method: 'GET' | 'POST' | 'PATCH',
  path: () => string,
  options: { key?: () => string; body?: string | (() => string); contentType?: string } = {},
): Target {
  return {
    name,
    system,
    workload,
    options: {
      url,
      requests: [
        {
          method,
          body: typeof options.body === 'function' ? options.body() : options.body,
          setupRequest: (request) => {
            request.path = path();
            if (typeof options.body === 'function') request.body = options.body();
            const headers: Record<string, string> = {};
            if (options.body !== undefined)
              headers['content-type'] = options.contentType ?? 'application/json';
            if (options.key) headers.authorization = `Bearer ${options.key()}`;
            request.headers = headers;
            return request;
          },
        },
      ],
    },
  };
}

/**
 * A Folio's list, list without a total and count over `bench/big` (`<prefix>-list`,
 * `<prefix>-list-nototal`, `<prefix>-count`); the list and count share one cycle of categories,
 * as raw better-sqlite3's do.
 */
function folioQueryTargets(
  prefix: string,
  system: Target['system'],
  url: string,
  key: () => string,
): Target[] {
  const category = categoryCycle();
  const noTotalCategory = categoryCycle();
  return [
    varying(
      `${prefix}-list`,
      system,
      LIST,
      url,
      'GET',
      () => `/bench/big?filter[category]=${category()}&sort=price&limit=${PAGE}`,
      {
        key,
      },
    ),
    varying(
      `${prefix}-list-nototal`,
      system,
      LIST_NO_TOTAL,
      url,
      'GET',
      () => `/bench/big?filter[category]=${noTotalCategory()}&sort=price&limit=${PAGE}&total=none`,
      { key },
    ),
    varying(
      `${prefix}-count`,
      system,
      COUNT,
      url,
      'GET',
      () => `/bench/big?count=true&filter[category]=${category()}`,
      {
        key,
      },
    ),
  ];
}

export function workloadTargets(s: WorkloadServers): Target[] {
  const targets: Target[] = [];
  const patch = 'PATCH merge';
  const rawNoTotalCategory = categoryCycle();
  const rawCategory = categoryCycle();
  const jsonCategory = categoryCycle();
  let pouchStart = 0;

  targets.push(
    varying('koa-patch', 'bare Koa', patch, s.bare.url, 'PATCH', () => '/docs/1', { body: patchBody }),
    varying('folio-patch', 'Folio', patch, s.folio.url, 'PATCH', () => `/bench/items/${s.nextId()}`, {
      key: s.nextKey,
      body: patchBody,
      contentType: 'application/merge-patch+json',
    }),
    { name: 'koa-list', system: 'bare Koa', workload: LIST, options: { url: `${s.bare.url}/docs` } },
    {
      name: 'koa-count',
      system: 'bare Koa',
      workload: COUNT,
      options: { url: `${s.bare.url}/docs?count=true` },
    },
    ...folioQueryTargets('folio', 'Folio', s.folio.url, s.nextKey),
  );
  if (s.folioUncached) {
    const { server, nextKey } = s.folioUncached;
    targets.push(...folioQueryTargets('folionc', FOLIO_UNCACHED, server.url, nextKey));
  }
  if (s.raw) {
    const raw = s.raw.url;
    targets.push(
      varying('raw-get', 'raw better-sqlite3', 'GET by id', raw, 'GET', () => `/items/${s.nextNumber()}`),
      {
        name: 'raw-post',
        system: 'raw better-sqlite3',
        workload: 'POST create',
        options: { url: `${raw}/items`, method: 'POST', headers: json, body: JSON.stringify(BODY) },
      },
      varying('raw-patch', 'raw better-sqlite3', patch, raw, 'PATCH', () => `/items/${s.nextNumber()}`, {
        body: patchBody,
      }),
      // The same rows Folio writes (document, the version it replaces, change), as cheaply as raw SQL can.
      {
        name: 'rawrows-post',
        system: RAW_ROWS,
        workload: 'POST create',
        options: { url: `${raw}/rows/items`, method: 'POST', headers: json, body: JSON.stringify(BODY) },
      },
      varying('rawrows-patch', RAW_ROWS, patch, raw, 'PATCH', () => `/rows/items/${s.nextNumber()}`, {
        body: patchBody,
      }),
      varying(
        'raw-list',
        'raw better-sqlite3',
        LIST,
        raw,
        'GET',
        () => `/big?category=${rawCategory()}&limit=${PAGE}`,
      ),
      varying(
        'raw-list-nototal',
        'raw better-sqlite3',
        LIST_NO_TOTAL,
        raw,
        'GET',
        () => `/big?category=${rawNoTotalCategory()}&limit=${PAGE}`,
      ),
      varying(
        'raw-count',
        'raw better-sqlite3',
        COUNT,
        raw,
        'GET',
        () => `/big/count?category=${rawCategory()}`,
      ),
    );
  }
  if (s.jsonServer) {
    targets.push(
      varying(
        'json-server-patch',
        'json-server',
        patch,
        s.jsonServer.url,
        'PATCH',
        () => `/items/${s.nextNumber()}`,
        {
          body: patchBody,
        },
      ),
    );
  }
  if (s.jsonBig) {
    targets.push(
      varying(
        'json-server-list',
        'json-server',
        LIST,
        s.jsonBig.url,
        'GET',
        () => `/big?category=${jsonCategory()}&_sort=price&_limit=${PAGE}`,
      ),
      // `_limit=0`: json-server filters the whole collection and sends X-Total-Count, no rows.
      varying(
        'json-server-count',
        'json-server',
        COUNT,
        s.jsonBig.url,
        'GET',
        () => `/big?category=${jsonCategory()}&_limit=0`,
      ),
    );
  }
  if (s.pouch) {
    targets.push(
      varying(
        'pouchdb-list',
        'pouchdb-server',
        LIST,
        s.pouch.url,
        'GET',
        () =>
          `/items/_all_docs?include_docs=true&limit=${PAGE}&startkey=%22doc${(pouchStart++ * 37) % 900}%22`,
      ),
    );
  }
  return targets;
}
