/** The client's types as openapi-typescript prints them for the current OpenAPI document. */
import openapiTS, { type OpenAPI3 } from 'openapi-typescript';
import { buildOpenApiDocument } from '../src/http/openapi/document.js';
import { FOLIO_VERSION } from '../src/version.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is plain JSON edited by key
type Json = any;

/**
 * The list's `count=true` and `explain=true` change its answer's type; the client offers them as
 * `count()` and `explain()` (client/index.ts), so its list takes neither and answers a
 * DocumentList, with no union to narrow.
 */
function listWithoutModes(document: Json): void {
  for (const [path, item] of Object.entries<Json>(document.paths)) {
    if (!/^(\/api\/data\/\{env\})?\/\{ns\}\/\{collection\}$/.test(path)) continue;
    const list = item.get;
    list.parameters = list.parameters.filter(
      (p: Json) => !(p.in === 'query' && (p.name === 'count' || p.name === 'explain')),
    );
    list.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/DocumentList' };
  }
}

export async function clientTypes(): Promise<string> {
  // The document is plain JSON; openapi-typescript has its own (structurally equal) types for it.
  const document = JSON.parse(JSON.stringify(buildOpenApiDocument(FOLIO_VERSION)));
  listWithoutModes(document);
  return openapiTS(document as OpenAPI3, { silent: true });
}
