/**
 * A typed client for Folio's HTTP API: openapi-fetch over the types generated from
 * `/openapi.json` (folioApi.d.ts). Paths, parameters, bodies and responses are checked by the
 * TypeScript compiler.
 *
 *   const folio = createFolioClient('http://localhost:3000', process.env.FOLIO_API_KEY);
 *   const { data, error } = await folio.POST('/{ns}/{collection}', {
 *     params: { path: { ns: 'default', collection: 'notes' } },
 *     body: { title: 'hello' },
 *   });
 */
import createClient from 'openapi-fetch';
import type { paths } from './folioApi.js';

export type { paths } from './folioApi.js';

export function createFolioClient(baseUrl: string, bearer?: string) {
  return createClient<paths>({
    baseUrl,
    ...(bearer ? { headers: { Authorization: `Bearer ${bearer}` } } : {}),
  });
}
