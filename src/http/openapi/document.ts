/**
 * The OpenAPI 3.1 document of the public API, generated (zod-openapi) from the declarations each
 * route module keeps beside its routes (declare.ts), plus the dashboard's files and the
 * session-authenticated mirror of the data routes.
 */

import { createDocument, type ZodOpenApiPathsObject } from 'zod-openapi';
import { DASHBOARD_OPERATIONS } from '../dashboard/routes.js';
import { ACCOUNT_OPERATIONS } from '../routes/account.js';
import { API_DOC_OPERATIONS } from '../routes/apiDocs.js';
import { COLLECTION_OPERATIONS } from '../routes/collections.js';
import { DOCUMENT_OPERATIONS } from '../routes/documents.js';
import { INDEX_OPERATIONS } from '../routes/indexes.js';
import { KEY_OPERATIONS } from '../routes/keys.js';
import { OPERATIONS_OPERATIONS } from '../routes/operations.js';
import { PLAN_OPERATIONS } from '../routes/plans.js';
import { SCHEMA_OPERATIONS } from '../routes/schemas.js';
import { SERVICE_INDEX_OPERATIONS } from '../routes/serviceIndex.js';
import { STREAM_OPERATIONS } from '../routes/streams.js';
import { TRANSFER_OPERATIONS } from '../routes/transfer.js';
import { TRASH_OPERATIONS } from '../routes/trash.js';
import { WEBHOOK_OPERATIONS } from '../routes/webhooks.js';
import { errorTable } from './components.js';
import { sessionMirror } from './dashboard.js';
import { type OperationDeclaration, toOperation } from './declare.js';

/** Every declared operation, in the document's order. */
export function declaredOperations(): OperationDeclaration[] {
  return [
    ...SERVICE_INDEX_OPERATIONS,
    ...OPERATIONS_OPERATIONS,
    ...API_DOC_OPERATIONS,
    ...ACCOUNT_OPERATIONS,
    ...KEY_OPERATIONS,
    ...PLAN_OPERATIONS,
    ...COLLECTION_OPERATIONS,
    ...DOCUMENT_OPERATIONS,
    ...INDEX_OPERATIONS,
    ...SCHEMA_OPERATIONS,
    ...TRASH_OPERATIONS,
    ...WEBHOOK_OPERATIONS,
    ...TRANSFER_OPERATIONS,
    ...STREAM_OPERATIONS,
    ...DASHBOARD_OPERATIONS,
  ];
}

function declaredPaths(): ZodOpenApiPathsObject {
  const paths: ZodOpenApiPathsObject = {};
  for (const op of declaredOperations()) {
    paths[op.path] ??= {};
    const item = paths[op.path]!;
    if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${op.path} is declared twice`);
    item[op.method] = toOperation(op);
  }
  return paths;
}

export function buildOpenApiDocument(version: string): ReturnType<typeof createDocument> {
  const paths = declaredPaths();
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Folio',
      version,
      license: { name: 'MIT', identifier: 'MIT' },
      description: [
        'A self-hostable JSON document store.',
        'Errors are `{"error":{"code","message","details"}}`, whatever the route or method; every response carries `X-Request-Id`, and every response to a request with a valid API key carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.',
        'A request with an `Origin` (a browser) gets CORS headers besides: `Access-Control-Allow-Origin`, `Access-Control-Allow-Credentials` and `Access-Control-Expose-Headers` (the headers above, `ETag`, `Location`, `Retry-After`, `X-Document-Version`), and a preflight `Access-Control-Allow-Methods`, `Access-Control-Allow-Headers` and `Access-Control-Max-Age`; every answer carries `Vary: Origin`.',
        '',
        errorTable(),
      ].join('\n'),
    },
    servers: [{ url: '/', description: 'The Folio server that serves this document' }],
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key: `folio_sk_<live|test>_...`' },
        session: { type: 'http', scheme: 'bearer', description: 'Session token from signup or login' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'folio_session' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The operator token `metrics.token`' },
      },
    },
    paths: { ...paths, ...sessionMirror(paths) },
  });
}
