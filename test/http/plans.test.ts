/** `GET /api/plans`: the configured plans and limits, as the dashboard shows them. */
import { expect } from 'chai';
import { startTestServer } from '../support/server.js';

describe('plans and limits', () => {
  it('answers the configured limits of every plan, without a session', async () => {
    const server = await startTestServer({
      config: { plans: { pro: { maxFilters: 7, storedVersions: 33 } } },
    });
    try {
      const res = await server.request('GET', '/api/plans');
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body.plans)).to.deep.equal(['free', 'pro', 'team']);
      expect(res.body.plans).to.deep.equal(server.running.services.config.plans);
      expect(res.body.plans.pro).to.include({ maxFilters: 7, storedVersions: 33, versionDiff: true });
    } finally {
      await server.close();
    }
  });
});
