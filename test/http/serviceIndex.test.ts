/** `GET /`: the first URL `npm start` prints leads to the dashboard, the docs and the health checks. */
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';

describe('GET /', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('answers an index of links, each of which answers 200', async () => {
    const index = await server.request('GET', '/');
    expect(index.status).to.equal(200);
    expect(index.body).to.include({ name: 'Folio' });
    const links = index.body.links as Record<string, string>;
    expect(Object.keys(links)).to.have.members(['dashboard', 'docs', 'openapi', 'health', 'ready']);
    for (const link of Object.values(links)) {
      const res = await fetch(`${server.url}${link}`);
      expect(res.status, link).to.equal(200);
    }
  });
});
