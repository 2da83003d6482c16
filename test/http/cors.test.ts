import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

forEachStore('CORS for browser clients', (ctx) => {
  it('answers a preflight without a key, allowing the Authorization header and the write methods', async () => {
    const res = await ctx.server.request('OPTIONS', `/${ctx.tenant.project}/notes/x`, {
      headers: {
        Origin: 'https://app.example',
        'Access-Control-Request-Method': 'PATCH',
        'Access-Control-Request-Headers': 'authorization, content-type, if-match',
      },
    });
    expect(res.status).to.equal(204);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    expect(res.headers.get('access-control-allow-methods')).to.include('PATCH');
    expect(res.headers.get('access-control-allow-headers')).to.include('authorization');
  });

  it('lets a page read ETag, rate-limit and request-id headers', async () => {
    const res = await ctx.server.request('POST', `/${ctx.tenant.project}/notes`, {
      key: ctx.tenant.key,
      body: { a: 1 },
      headers: { Origin: 'https://app.example' },
    });
    expect(res.status).to.equal(201);
    expect(res.headers.get('access-control-allow-origin')).to.equal('*');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    for (const name of ['etag', 'x-ratelimit-remaining', 'x-request-id', 'x-document-version', 'location']) {
      expect(exposed).to.include(name);
    }
  });
});

describe('CORS origin configuration', () => {
  it('cors.origin narrows the allowed origin', async () => {
    const server = await startTestServer({ config: { cors: { origin: 'https://only.example' } } });
    try {
      const res = await server.request('GET', '/healthz', { headers: { Origin: 'https://app.example' } });
      expect(res.headers.get('access-control-allow-origin')).to.equal('https://only.example');
    } finally {
      await server.close();
    }
  });
});
