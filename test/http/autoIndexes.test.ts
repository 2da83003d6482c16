import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { AutoIndexer } from '../../src/services/autoIndexes.js';
import { tenantScope } from '../support/scope.js';
import type { Json } from '../support/server.js';
import { forEachStore, tenantCalls } from '../support/stores.js';

/** Small numbers so a test sees an index come and go. */
const POLICY = {
  enabled: true,
  minDocuments: 5,
  minQueries: 3,
  windowMs: 60_000,
  unusedAfterMs: 300,
  maxPerCollection: 1,
};

forEachStore(
  'automatic indexes',
  (ctx) => {
    const { at } = tenantCalls(ctx);
    const get = (path: string) => ctx.server.request('GET', path, { key: ctx.tenant.key });
    const settled = () => ctx.server.running.services.autoIndexes.settled();
    const indexes = async (collection: string) =>
      (await get(at(collection, '/_indexes'))).body.data as Json[];
    const seed = async (collection: string, n: number) => {
      for (let i = 0; i < n; i++) {
        await ctx.server.request('POST', at(collection), {
          key: ctx.tenant.key,
          body: { color: `c${i % 2}`, size: i },
        });
      }
    };
    /** A collection of its own with the color index built, so each case stands alone (`--grep`). */
    const withAutoIndex = async (collection: string) => {
      await seed(collection, 6);
      for (let i = 0; i < 3; i++) await get(at(collection, '?filter[color]=c1'));
      await settled();
      expect((await indexes(collection)).map((i) => i.name)).to.deep.equal(['auto_color_1']);
    };

    it('builds one after minQueries (3) queries on an unindexed field and lists it as auto', async () => {
      await seed('big', 6);
      for (let i = 0; i < 2; i++) await get(at('big', '?filter[color]=c1'));
      await settled();
      expect(await indexes('big')).to.deep.equal([]);
      await get(at('big', '?filter[color]=c1'));
      await settled();
      const [auto] = await indexes('big');
      expect(auto).to.include({ name: 'auto_color_1', auto: true, state: 'ready' });
      // Answers are unchanged (which index the planner picks on six documents is its own call).
      const page = await get(at('big', '?filter[color]=c1'));
      expect(page.body.data.map((d: Json) => d.size)).to.deep.equal([1, 3, 5]);
    });

    it('never more than maxPerCollection (1) per collection', async () => {
      await withAutoIndex('capped');
      for (let i = 0; i < 4; i++) await get(at('capped', '?sort=size'));
      await settled();
      expect((await indexes('capped')).map((i) => i.name)).to.deep.equal(['auto_color_1']);
    });

    it('not on a collection below minDocuments (5)', async () => {
      await seed('small', 4);
      for (let i = 0; i < 4; i++) await get(at('small', '?filter[color]=c1'));
      await settled();
      expect(await indexes('small')).to.deep.equal([]);
    });

    it('drops one no query used for unusedAfterMs (300 ms)', async () => {
      await withAutoIndex('unused');
      // Sweeps run at most once a second; any query may run one.
      await sleep(1100);
      await get(at('unused', '?sort=size'));
      await settled();
      expect(await indexes('unused')).to.deep.equal([]);
    });

    it('refuses auto_ names for declared indexes', async () => {
      const res = await ctx.server.request('POST', at('big', '/_indexes'), {
        key: ctx.tenant.key,
        body: { fields: [{ path: 'x' }], name: 'auto_x_1' },
      });
      expect(res.status).to.equal(400);
    });

    it('with enabled false, a project without its own setting (or set off) gets none; a project set on gets one', async () => {
      await seed('quiet', 6);
      const scope = await tenantScope(ctx.server, ctx.tenant);
      const off = new AutoIndexer(ctx.server.running.services.store, { ...POLICY, enabled: false });
      for (let i = 0; i < 10; i++) off.observe(scope, 'quiet', ['color'], 5);
      for (let i = 0; i < 10; i++) off.observe(scope, 'quiet', ['color'], 5, null);
      for (let i = 0; i < 10; i++) off.observe(scope, 'quiet', ['color'], 5, false);
      await off.settled();
      expect(await indexes('quiet')).to.deep.equal([]);
      for (let i = 0; i < 3; i++) off.observe(scope, 'quiet', ['color'], 5, true);
      await off.settled();
      expect((await indexes('quiet')).map((i) => i.name)).to.deep.equal(['auto_color_1']);
    });
  },
  { config: { autoIndexes: POLICY } },
);
