/** The OpenAPI 3.1 document of the public API, generated from the zod schemas (zod-openapi). */

import { createDocument } from 'zod-openapi';
import { errorTable } from './components.js';
import { DASHBOARD_PATHS } from './dashboard.js';
import { PATHS } from './operations.js';

export function buildOpenApiDocument(version: string): ReturnType<typeof createDocument> {
  return createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Folio',
      version,
      description: [
        'A self-hostable JSON document store.',
        'Errors are `{"error":{"code","message","details"}}`, whatever the route or method; every response carries `X-Request-Id`, and every response to a request with a valid API key carries `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset`.',
        '',
        errorTable(),
      ].join('\n'),
    },
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'API key: `folio_sk_<live|test>_...`' },
        session: { type: 'http', scheme: 'bearer', description: 'Session token from signup or login' },
        sessionCookie: { type: 'apiKey', in: 'cookie', name: 'folio_session' },
        metricsToken: { type: 'http', scheme: 'bearer', description: 'The operator token `metrics.token`' },
      },
    },
    paths: { ...PATHS, ...DASHBOARD_PATHS },
  });
}
