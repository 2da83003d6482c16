/**
 * `npm run openapi:write [file]`: the OpenAPI document as the server serves it, written to a file
 * (default `test-output/openapi.json`) for tools that read one: Redocly's linter
 * (`npm run lint:openapi`) and Prism's validating proxy (`npm run test:contract`).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { buildOpenApiDocument } from '../src/http/openapi/document.js';
import { FOLIO_VERSION } from '../src/version.js';

const target = resolve(process.argv[2] ?? 'test-output/openapi.json');
mkdirSync(dirname(target), { recursive: true });
writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(FOLIO_VERSION), null, 2)}\n`);
process.stdout.write(`wrote ${target}\n`);
