import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

forEachStore('health check', (ctx, target) => {
  it('GET /healthz answers 200 with the store kind, without a key', async () => {
    const res = await ctx.server.request('GET', '/healthz');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      status: 'ok',
      store: target.name === 'embedded' ? 'embedded' : 'mongodb',
      // The webhook dispatcher reads the store's one change source from start-up.
      streams: { changeSources: 1 },
    });
  });
});

describe('health check without a store', () => {
  it('answers 503 once the store stops answering, so a load balancer drops the instance', async () => {
    const server = await startTestServer();
    try {
      await server.running.services.store.close();
      const res = await server.request('GET', '/healthz');
      expect(res.status).to.equal(503);
      expect(res.body.status).to.equal('unavailable');
    } finally {
      await server.close();
    }
  });
});
