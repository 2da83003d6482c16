import { expect } from 'chai';
import { forEachStore } from '../support/stores.js';

const people = [
  {
    _id: 'p01',
    name: 'Ana',
    age: 31,
    city: 'Paris',
    tags: ['admin', 'dev'],
    address: { city: 'Paris', zip: '75001' },
  },
  { _id: 'p02', name: 'Bruno', age: 25, city: 'Lyon', tags: ['dev'], address: { city: 'Lyon' } },
  { _id: 'p03', name: 'Chloé', age: '40', city: 'paris', tags: [], active: true },
  { _id: 'p04', name: 'Émile', age: 52, city: 'Nice', active: false, joined: '2024-03-01T00:00:00.000Z' },
  { _id: 'p05', name: 'Zoë', age: null, city: 'Lille', joined: '2023-11-15T00:00:00.000Z' },
  { _id: 'p06', name: 'ÉMILIE', age: 18, joined: '2025-01-01T00:00:00.000Z', score: 7 },
];

forEachStore(
  'listing and querying over HTTP',
  (ctx) => {
    const list = (query: string) =>
      ctx.server.request('GET', `/${ctx.tenant.project}/people${query}`, { key: ctx.tenant.key });
    const ids = async (query: string): Promise<string[]> => {
      const res = await list(query);
      expect(res.status, `${query}: ${res.text}`).to.equal(200);
      return res.body.data.map((d: { _id: string }) => d._id);
    };

    before(async () => {
      for (const p of people) {
        const res = await ctx.server.request('POST', `/${ctx.tenant.project}/people`, {
          key: ctx.tenant.key,
          body: p,
        });
        expect(res.status).to.equal(201);
      }
    });

    it('lists with {data, meta:{total, limit, offset, hasMore}}, default limit 20, creation order', async () => {
      const res = await list('');
      expect(res.body.meta).to.deep.equal({ total: 6, limit: 20, offset: 0, hasMore: false, next: null });
      expect(res.body.data.map((d: { _id: string }) => d._id)).to.deep.equal([
        'p01',
        'p02',
        'p03',
        'p04',
        'p05',
        'p06',
      ]);
      expect(res.body.data[0]).to.include({ name: 'Ana', $version: 1 });
    });

    it('paginates with limit and offset; hasMore tells when to stop', async () => {
      const page1 = await list('?limit=4');
      expect(page1.body.meta).to.include({ total: 6, limit: 4, offset: 0, hasMore: true });
      expect(page1.body.meta.next).to.be.a('string');
      const page2 = await list('?limit=4&offset=4');
      expect(page2.body.meta).to.deep.equal({ total: 6, limit: 4, offset: 4, hasMore: false, next: null });
      expect(page2.body.data).to.have.length(2);
      const past = await list('?limit=4&offset=10');
      expect(past.body).to.deep.equal({
        data: [],
        meta: { total: 6, limit: 4, offset: 10, hasMore: false, next: null },
      });
      const exact = await list('?limit=3&offset=3');
      expect(exact.body.meta).to.deep.equal({ total: 6, limit: 3, offset: 3, hasMore: false, next: null });
      expect((await list('?limit=2&filter[city]=Lyon')).body.meta.total).to.equal(1);
    });

    it('equality matches the raw string or its JSON reading (age=40 finds "40")', async () => {
      expect(await ids('?filter[city]=Paris')).to.deep.equal(['p01']);
      expect(await ids('?filter[age]=40')).to.deep.equal(['p03']);
      expect(await ids('?filter[age]=31')).to.deep.equal(['p01']);
      expect(await ids('?filter[active]=true')).to.deep.equal(['p03']);
      expect(await ids('?filter[age][eq]=25')).to.deep.equal(['p02']);
    });

    it('neq, in and exists', async () => {
      expect(await ids('?filter[city][neq]=Paris')).to.deep.equal(['p02', 'p03', 'p04', 'p05', 'p06']);
      expect(await ids('?filter[city][in]=Lyon,Nice')).to.deep.equal(['p02', 'p04']);
      expect(await ids('?filter[active][exists]=true')).to.deep.equal(['p03', 'p04']);
      expect(await ids('?filter[active][exists]=false')).to.deep.equal(['p01', 'p02', 'p05', 'p06']);
    });

    it('gt/gte/lt/lte compare numbers numerically and ISO dates as strings', async () => {
      expect(await ids('?filter[age][gt]=30')).to.deep.equal(['p01', 'p04']);
      expect(await ids('?filter[age][lte]=25')).to.deep.equal(['p02', 'p06']);
      expect(await ids('?filter[joined][gte]=2024-01-01')).to.deep.equal(['p04', 'p06']);
      expect(await ids('?filter[joined][lt]=2024-01-01')).to.deep.equal(['p05']);
    });

    it('contains is case-insensitive and Unicode-aware', async () => {
      expect(await ids('?filter[name][contains]=émil')).to.deep.equal(['p04', 'p06']);
      expect(await ids('?filter[city][contains]=PAR')).to.deep.equal(['p01', 'p03']);
    });

    it('array fields match when any element matches; dot notation reaches nested fields', async () => {
      expect(await ids('?filter[tags]=dev')).to.deep.equal(['p01', 'p02']);
      expect(await ids('?filter[address.city]=Lyon')).to.deep.equal(['p02']);
      expect(await ids('?filter[address.zip][exists]=true')).to.deep.equal(['p01']);
    });

    it('several filters combine with AND', async () => {
      expect(await ids('?filter[tags]=dev&filter[age][gt]=26')).to.deep.equal(['p01']);
    });

    it('metadata fields filter and sort: _id, $version, $createdAt', async () => {
      expect(await ids('?filter[_id][in]=p02,p05')).to.deep.equal(['p02', 'p05']);
      expect(await ids('?filter[$version]=1&limit=2')).to.deep.equal(['p01', 'p02']);
      expect(await ids('?sort=-$createdAt&limit=2')).to.deep.equal(['p06', 'p05']);
      expect(await ids('?sort=-_id&limit=2')).to.deep.equal(['p06', 'p05']);
    });

    it('sort ascending and descending, ties broken by _id', async () => {
      expect(await ids('?filter[age][gte]=18&sort=age')).to.deep.equal(['p06', 'p02', 'p01', 'p04']);
      expect(await ids('?filter[age][gte]=18&sort=-age')).to.deep.equal(['p04', 'p01', 'p02', 'p06']);
      // Equal city values (none) and missing ones: missing sorts first ascending, ties by _id.
      expect(await ids('?filter[_id][in]=p06,p01,p02&sort=city')).to.deep.equal(['p06', 'p02', 'p01']);
    });

    it('select returns only the named fields, _id always', async () => {
      const res = await list('?select=name,address.city&filter[_id]=p01');
      expect(res.body.data).to.deep.equal([{ _id: 'p01', name: 'Ana', address: { city: 'Paris' } }]);
      const meta = await list('?select=$version&filter[_id]=p02');
      expect(meta.body.data).to.deep.equal([{ _id: 'p02', $version: 1 }]);
    });

    it('count=true answers {count} only', async () => {
      const res = await list('?count=true&filter[tags]=dev');
      expect(res.body).to.deep.equal({ count: 2 });
    });

    it('bad queries are 400 invalid_query naming the parameter', async () => {
      const cases: Array<[string, string]> = [
        ['?filter[age][between]=1', 'filter[age][between]'],
        ['?filter[age=1', 'filter[age'],
        ['?limit=abc', 'limit'],
        ['?limit=-1', 'limit'],
        ['?offset=1.5', 'offset'],
        ['?filter[active][exists]=maybe', 'filter[active][exists]'],
        ['?sort=', 'sort'],
        ['?filter[$where]=1', 'filter[$where]'],
      ];
      for (const [query, param] of cases) {
        const res = await list(query);
        expect(res.status, query).to.equal(400);
        expect(res.body.error.code, query).to.equal('invalid_query');
        expect(res.body.error.message, query).to.include(param);
      }
    });

    it('over a plan maximum is 403 plan_limit_exceeded (Free: limit 50, offset 1000, 5 filters)', async () => {
      const over = [
        '?limit=51',
        '?offset=1001',
        `?${Array.from({ length: 6 }, (_, i) => `filter[f${i}]=1`).join('&')}`,
      ];
      for (const query of over) {
        const res = await list(query);
        expect(res.status, query).to.equal(403);
        expect(res.body.error.code).to.equal('plan_limit_exceeded');
        expect(res.body.error.details.plan).to.equal('free');
      }
      expect((await list('?limit=50&offset=1000')).status).to.equal(200);
    });

    it('an empty or unknown collection lists as empty', async () => {
      const res = await ctx.server.request('GET', `/${ctx.tenant.project}/nobody`, { key: ctx.tenant.key });
      expect(res.body).to.deep.equal({
        data: [],
        meta: { total: 0, limit: 20, offset: 0, hasMore: false, next: null },
      });
    });
  },
  { plan: 'free' },
);
