/**
 * A typed client for Folio's HTTP API: openapi-fetch over the types generated from
 * `/openapi.json` (folioApi.d.ts). Paths, parameters, bodies and responses are checked by the
 * TypeScript compiler, and every call its types allow works as typed:
 *
 *   const folio = createFolioClient('http://localhost:3000', process.env.FOLIO_API_KEY);
 *   const { data } = await folio.GET('/{ns}/{collection}', {
 *     params: { path: { ns: 'default', collection: 'notes' }, query: { filter: { n: { gte: 1 } } } },
 *   });
 *   await folio.PATCH('/{ns}/{collection}/{id}', { params: { path }, body: { done: true } });
 *
 * - Query strings are written in Folio's own syntax (`filter[n][gte]=1`) by `folioQuerySerializer`;
 *   `in` takes an array (`filter: { name: { in: ['A', 'B'] } }` → `filter[name][in]=A,B`).
 * - A document PATCH is sent as a merge patch (`application/merge-patch+json`) when its body is an
 *   object and as a JSON patch (`application/json-patch+json`) when it is an array; an import's
 *   body as JSON (an array), NDJSON (a string of `{...}` lines) or CSV (another string), unless
 *   the call names its Content-Type.
 * - A list answers a `DocumentList`: `count()` and `explain()` are the list's `count=true` and
 *   `explain=true` answers, typed as `Count` and `QueryPlan`.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './folioApi.js';
import { queryString } from './http.js';

export type { components, paths } from './folioApi.js';

type Schemas = components['schemas'];
export type ListQuery = NonNullable<paths['/{ns}/{collection}']['get']['parameters']['query']>;
type CollectionPath = paths['/{ns}/{collection}']['get']['parameters']['path'];

export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
export const JSON_PATCH_TYPE = 'application/json-patch+json';
export const NDJSON_TYPE = 'application/x-ndjson';
export const CSV_TYPE = 'text/csv';

/**
 * Folio's query syntax (`filter[n][gte]=1`; `in` and other lists comma-separated), as
 * openapi-fetch wants it: without the `?`. The library's own writer (http.js) writes it.
 */
export function folioQuerySerializer(query: Record<string, unknown>): string {
  return queryString(query).slice(1);
}

/**
 * The Content-Type a body is, where the route takes several and the caller named none (the
 * default is JSON): a document PATCH is a JSON patch (an array) or a merge patch (an object);
 * an import is a JSON array, NDJSON (a string of `{...}` lines) or CSV (any other string).
 */
const bodyType: Middleware = {
  async onRequest({ request, schemaPath }) {
    const type = request.headers.get('Content-Type') ?? '';
    if (!type.startsWith('application/json')) return undefined;
    const isPatch = request.method === 'PATCH' && schemaPath.endsWith('/{ns}/{collection}/{id}');
    const isImport = request.method === 'POST' && schemaPath.endsWith('/{ns}/{collection}/_import');
    if (!isPatch && !isImport) return undefined;
    const body = (await request.clone().text()).trimStart();
    if (isPatch)
      request.headers.set('Content-Type', body.startsWith('[') ? JSON_PATCH_TYPE : MERGE_PATCH_TYPE);
    else if (!body.startsWith('['))
      request.headers.set('Content-Type', body.startsWith('{') ? NDJSON_TYPE : CSV_TYPE);
    return request;
  },
};

/** Objects and arrays as JSON; a string (a CSV or NDJSON import) as it is. */
function serializeBody(body: unknown): string {
  return typeof body === 'string' ? body : JSON.stringify(body);
}

export function createFolioClient(baseUrl: string, bearer?: string) {
  const client = createClient<paths>({
    baseUrl,
    querySerializer: folioQuerySerializer,
    bodySerializer: serializeBody,
    ...(bearer ? { headers: { Authorization: `Bearer ${bearer}` } } : {}),
  });
  client.use(bodyType);
  // The list's other two answers, by their own names (its `count` and `explain` parameters).
  const listAs = async <T>(path: CollectionPath, query: ListQuery, flag: 'count' | 'explain') => {
    const result = await client.GET('/{ns}/{collection}', {
      params: { path, query },
      // The flag is not in the list's typed query, whose answer is always a DocumentList.
      querySerializer: (q) => `${folioQuerySerializer(q)}${Object.keys(q).length > 0 ? '&' : ''}${flag}=true`,
    });
    return result as unknown as { data?: T; error?: Schemas['Error']; response: Response };
  };
  return Object.assign(client, {
    /** `{count}` of the documents matching `query`'s filters. */
    count: (path: CollectionPath, query: ListQuery = {}) => listAs<Schemas['Count']>(path, query, 'count'),
    /** `{plan}`: how the store runs the page `query` asks for (read-write keys). */
    explain: (path: CollectionPath, query: ListQuery = {}) =>
      listAs<Schemas['QueryPlan']>(path, query, 'explain'),
  });
}
