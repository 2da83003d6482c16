/** The client's types as openapi-typescript prints them for the current OpenAPI document. */
import openapiTS, { type OpenAPI3 } from 'openapi-typescript';
import { buildOpenApiDocument } from '../src/http/openapi/document.js';
import { FOLIO_VERSION } from '../src/version.js';

export async function clientTypes(): Promise<string> {
  // The document is plain JSON; openapi-typescript has its own (structurally equal) types for it.
  const document = JSON.parse(JSON.stringify(buildOpenApiDocument(FOLIO_VERSION))) as OpenAPI3;
  return openapiTS(document, { silent: true });
}
