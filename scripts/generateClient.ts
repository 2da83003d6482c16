/**
 * `npm run client:generate`: the typed client's types (client/folioApi.d.ts) from the OpenAPI
 * document, with openapi-typescript. `test/http/openapi.test.ts` fails when the committed file
 * differs from what this produces, so CI keeps it current.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { clientTypes } from '../client/generate.js';

const target = fileURLToPath(new URL('../client/folioApi.d.ts', import.meta.url));
writeFileSync(target, await clientTypes());
process.stdout.write(`wrote ${target}\n`);
