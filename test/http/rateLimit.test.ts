import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

/**
 * A long window, so every burst below lands inside one window however slow the machine is:
 * the tests count successes, never time. (The 1 s default is checked in config.test.ts.)
 */
const WINDOW_MS = 60_000;
const TEST_CONFIG = { rateLimit: { windowMs: WINDOW_MS } };

forEachStore(
  'per-key rate limits',
  (ctx, target) => {
    it('a burst of 30 requests on a Free key: exactly 10 succeed, the rest are 429 rate_limited', async () => {
      const t = await ctx.server.tenant({ plan: 'free' });
      const burst = await Promise.all(
        Array.from({ length: 30 }, () => ctx.server.request('GET', `/${t.project}/rl`, { key: t.key })),
      );
      const ok = burst.filter((r) => r.status === 200);
      const limited = burst.filter((r) => r.status === 429);
      expect(ok).to.have.length(10);
      expect(limited).to.have.length(20);
      for (const res of limited) {
        expect(res.body.error.code).to.equal('rate_limited');
        expect(Number(res.headers.get('retry-after'))).to.be.within(1, WINDOW_MS / 1000);
        expect(res.headers.get('x-ratelimit-remaining')).to.equal('0');
        expect(res.headers.get('x-ratelimit-limit')).to.equal('10');
      }
    });

    it('keyed responses carry X-RateLimit-Limit, -Remaining (counting down) and -Reset (epoch seconds)', async () => {
      const t = await ctx.server.tenant({ plan: 'pro' });
      const before = Math.floor(Date.now() / 1000);
      const first = await ctx.server.request('GET', `/${t.project}/rl`, { key: t.key });
      const second = await ctx.server.request('GET', `/${t.project}/rl/missing`, { key: t.key });
      expect(first.headers.get('x-ratelimit-limit')).to.equal('50');
      const remaining = [first, second].map((r) => Number(r.headers.get('x-ratelimit-remaining')));
      expect(remaining[0]).to.be.at.most(49);
      expect(remaining[1]).to.equal((remaining[0] as number) - 1);
      expect(second.status).to.equal(404);
      const reset = Number(first.headers.get('x-ratelimit-reset'));
      expect(reset).to.be.within(before, before + WINDOW_MS / 1000 + 1);
    });

    it('plans set the limit: Team allows 200 per second', async () => {
      const t = await ctx.server.tenant({ plan: 'team' });
      const res = await ctx.server.request('GET', `/${t.project}/rl`, { key: t.key });
      expect(res.headers.get('x-ratelimit-limit')).to.equal('200');
    });

    // Only MongoDB is shared by several instances; the embedded store is one process by design.
    if (target.name !== 'embedded') {
      it('two instances on one MongoDB share the count: a Free key still gets exactly 10', async () => {
        const { config } = ctx.server.running.services;
        const second = await startTestServer({
          realRateLimits: true,
          config: {
            ...TEST_CONFIG,
            store: config.store,
            mongodbUri: config.mongodbUri,
            mongodb: config.mongodb,
          },
        });
        try {
          const t = await ctx.server.tenant({ plan: 'free' });
          const burst = await Promise.all(
            Array.from({ length: 30 }, (_, i) =>
              (i % 2 ? second : ctx.server).request('GET', `/${t.project}/rl`, { key: t.key }),
            ),
          );
          expect(burst.filter((r) => r.status === 200)).to.have.length(10);
        } finally {
          await second.close();
        }
      });
    }

    it('limits are per key: a second key of the same project has its own budget', async () => {
      const t = await ctx.server.tenant({ plan: 'free' });
      const other = await t.newKey({ env: 'live' });
      await Promise.all(
        Array.from({ length: 12 }, () => ctx.server.request('GET', `/${t.project}/rl`, { key: t.key })),
      );
      const res = await ctx.server.request('GET', `/${t.project}/rl`, { key: other.rawKey });
      expect(res.status).to.equal(200);
    });
  },
  { realRateLimits: true, config: TEST_CONFIG },
);
