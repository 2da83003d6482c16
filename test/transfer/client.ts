/** Helpers the import/export/bulk suites share: raw-body imports and reading a collection back. */
import type { ApiResponse, Json, Tenant, TestServer } from '../support/server.js';

export const CSV = 'text/csv';
export const NDJSON = 'application/x-ndjson';
export const JSON_TYPE = 'application/json';

export interface TransferClient {
  importRaw(collection: string, body: string, contentType: string, query?: string): Promise<ApiResponse>;
  /** Import `docs` as a JSON array. */
  importJson(collection: string, docs: unknown[], query?: string): Promise<ApiResponse>;
  /** Every document of the collection, in `_id` order (via export, so no page limits). */
  all(collection: string): Promise<Json[]>;
  req: (method: string, path: string, options?: Parameters<TestServer['request']>[2]) => Promise<ApiResponse>;
}

export function transferClient(ctx: { server: TestServer; tenant: Tenant }): TransferClient {
  const path = (p: string) => `/${ctx.tenant.project}${p}`;
  const req: TransferClient['req'] = (method, p, options = {}) =>
    ctx.server.request(method, path(p), { key: ctx.tenant.key, ...options });
  const importRaw: TransferClient['importRaw'] = (collection, body, contentType, query = '') =>
    req('POST', `/${collection}/_import${query}`, { rawBody: body, contentType });
  return {
    req,
    importJson: (collection, docs, query) => importRaw(collection, JSON.stringify(docs), JSON_TYPE, query),
    importRaw,
    async all(collection) {
      const res = await fetch(`${ctx.server.url}${path(`/${collection}/_export`)}`, {
        headers: { Accept: NDJSON, Authorization: `Bearer ${ctx.tenant.key}` },
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`export failed: ${res.status} ${text}`);
      return text
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line));
    },
  };
}

/** A document without its server-managed metadata: what an import is expected to reproduce. */
export function userPart(doc: Json): Json {
  const { $createdAt: _c, $updatedAt: _u, $version: _v, ...rest } = doc;
  return rest;
}
