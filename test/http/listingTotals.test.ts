/** `total=exact|estimate|none`: how `meta.total` is obtained, and when the store is asked to count. */
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import { ESTIMATE_CAP } from '../../src/services/listing.js';
import type { DocumentWrite, StoredFilter } from '../../src/store/port.js';
import { tenantScope } from '../support/scope.js';
import { forEachStore } from '../support/stores.js';

const SIZE = ESTIMATE_CAP + 60;

forEachStore(
  'meta.total modes (total=exact|estimate|none)',
  (ctx) => {
    const get = (query: string) =>
      ctx.server.request('GET', `/${ctx.tenant.project}/many${query}`, { key: ctx.tenant.key });
    const counts: Array<number | undefined> = [];

    before(async function () {
      this.timeout(60_000);
      // Written straight through the store: 1,060 documents over HTTP would cost seconds.
      const scope = await tenantScope(ctx.server, ctx.tenant);
      const now = new Date().toISOString();
      const writes: DocumentWrite[] = Array.from({ length: SIZE }, (_, i) => ({
        kind: 'put',
        expectedVersion: 0,
        document: { _id: newId('doc'), n: i % 2, $version: 1, $createdAt: now, $updatedAt: now },
        operation: 'create',
        apiKeyHint: 'test',
        keepVersions: 5,
      }));
      const { documents } = ctx.server.running.services.store;
      await documents.commit(scope, 'many', writes);
      // Watch (not replace) the real store's count: which requests ask it, with which bound.
      const count = documents.count.bind(documents);
      documents.count = (s, c, filter: StoredFilter, upTo?: number) => {
        counts.push(upTo);
        return count(s, c, filter, upTo);
      };
    });
    beforeEach(() => {
      counts.length = 0;
    });

    it('exact (the default) counts every match when the page does not show the end', async () => {
      for (const query of ['?limit=5', '?limit=5&total=exact']) {
        const res = await get(query);
        expect(res.body.meta).to.include({ total: SIZE, hasMore: true });
        expect(res.body.meta).to.not.have.property('totalExact');
      }
      expect(counts).to.deep.equal([undefined, undefined]);
      const filtered = await get('?limit=5&filter[n]=1');
      expect(filtered.body.meta.total).to.equal(SIZE / 2);
    });

    it('exact takes the total from a last page without counting', async () => {
      const res = await get(`?limit=10&offset=${SIZE - 4}`);
      expect(res.body.meta).to.include({ total: SIZE, hasMore: false });
      expect(counts).to.deep.equal([]);
    });

    it(`estimate stops ${ESTIMATE_CAP} past the page and says so; exact when the end is within reach`, async () => {
      const capped = await get('?limit=5&total=estimate');
      expect(capped.body.meta).to.include({ total: 5 + ESTIMATE_CAP, totalExact: false, hasMore: true });
      expect(counts).to.deep.equal([5 + ESTIMATE_CAP]);
      // The bound is offset + page + cap: 1,061 reaches the end (1,060), 1,059 stops one short.
      const reached = await get(`?limit=1&offset=${SIZE - ESTIMATE_CAP}&total=estimate`);
      expect(reached.body.meta).to.include({ total: SIZE, totalExact: true });
      const oneShort = await get(`?limit=1&offset=${SIZE - ESTIMATE_CAP - 2}&total=estimate`);
      expect(oneShort.body.meta).to.include({ total: SIZE - 1, totalExact: false });
    });

    it('none never counts: total is null, hasMore and next still page', async () => {
      const first = await get('?limit=5&total=none');
      expect(first.body.meta).to.include({ total: null, hasMore: true });
      const next = await get(`?limit=5&total=none&after=${first.body.meta.next}`);
      expect(next.body.meta).to.include({ total: null, hasMore: true });
      const last = await get(`?limit=5&total=none&offset=${SIZE - 2}`);
      expect(last.body.meta).to.include({ total: null, hasMore: false });
      expect(counts).to.deep.equal([]);
    });

    it('a cursor page counts the filter’s matches, not the rows after the cursor', async () => {
      const first = await get('?limit=5');
      const next = await get(`?limit=5&after=${first.body.meta.next}`);
      expect(next.body.meta).to.include({ total: SIZE, hasMore: true });
    });

    it('refuses another total with 400 invalid_query', async () => {
      const res = await get('?total=all');
      expect(res.status).to.equal(400);
      expect(res.body.error).to.include({ code: 'invalid_query' });
      expect(res.body.error.details).to.deep.equal({ param: 'total' });
    });
  },
  // Pro: offsets past 1,000 (Free's maximum) reach the end of the collection.
  { plan: 'pro' },
);
