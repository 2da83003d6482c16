/**
 * The embedded store's cache of list pages and counts, over HTTP: a repeated count or page is
 * answered from memory, and every route that writes documents (create, PUT, PATCH, DELETE,
 * restore from the trash, restore of a version, import, bulk) makes the next answer come from
 * the database again, right; a write to another collection does not.
 */
import { expect } from 'chai';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

const TOKEN = 'metrics-token-0123456789';

describe('query cache over HTTP', () => {
  let server: TestServer;
  let tenant: Tenant;
  before(async () => {
    server = await startTestServer({ config: { metrics: { enabled: true, token: TOKEN } } });
    tenant = await server.tenant({ plan: 'team' });
  });
  after(() => server.close());

  const counters = async () => {
    const text = (await server.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } }))
      .text;
    const read = (name: string) =>
      Number(/^(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? 0);
    return {
      hits: read('folio_sqlite_query_cache_hits_total'),
      misses: read('folio_sqlite_query_cache_misses_total'),
    };
  };
  const path = (collection: string) => `/${tenant.project}/${collection}`;
  const write = async (
    method: string,
    to: string,
    options: { body?: unknown; rawBody?: string; contentType?: string } = {},
  ) => {
    const res = await server.request(method, to, { key: tenant.key, ...options });
    expect(res.status, `${method} ${to}: ${res.text}`).to.be.within(200, 299);
    return res;
  };
  /** The count and the page `sort=n`, each asked twice: the second must be a hit of the first. */
  const answers = async (collection: string) => {
    const before = await counters();
    const ask = async () => {
      const count = await server.request('GET', `${path(collection)}?count=true`, { key: tenant.key });
      const page = await server.request('GET', `${path(collection)}?sort=n&limit=50`, { key: tenant.key });
      return { count: count.body.count as number, page: page.text };
    };
    const first = await ask();
    const between = await counters();
    const second = await ask();
    const after = await counters();
    expect(second).to.deep.equal(first);
    expect(after.hits - between.hits, 'the second count and page are hits').to.equal(2);
    expect(after.misses - between.misses).to.equal(0);
    return {
      ...first,
      missed: between.misses - before.misses,
      ns: (JSON.parse(first.page).data as Array<{ n: number }>).map((d) => d.n),
    };
  };

  it('answers repeats from memory and every document write route from the database again', async () => {
    const items = path('items');
    await write('POST', items, { body: { _id: 'a', n: 1 } });
    await write('POST', items, { body: { _id: 'b', n: 2 } });
    let seen = await answers('items');
    expect([seen.count, seen.ns, seen.missed]).to.deep.equal([2, [1, 2], 2]);

    // Each write: the next count and page miss (2 misses, page total included) and are right.
    const steps: Array<[string, () => Promise<unknown>, number, number[]]> = [
      ['create', () => write('POST', items, { body: { _id: 'c', n: 3 } }), 3, [1, 2, 3]],
      ['PUT', () => write('PUT', `${items}/b`, { body: { n: 20 } }), 3, [1, 3, 20]],
      [
        'PATCH',
        () => write('PATCH', `${items}/a`, { body: { n: 30 }, contentType: 'application/merge-patch+json' }),
        3,
        [3, 20, 30],
      ],
      ['DELETE', () => write('DELETE', `${items}/a`), 2, [3, 20]],
      ['restore from the trash', () => write('POST', `${items}/_trash/a/restore`), 3, [3, 20, 30]],
      ['restore of a version', () => write('POST', `${items}/b/versions/1/restore`), 3, [2, 3, 30]],
      [
        'import',
        () =>
          write('POST', `${items}/_import`, {
            rawBody: '{"_id":"d","n":4}\n{"_id":"e","n":5}\n',
            contentType: 'application/x-ndjson',
          }),
        5,
        [2, 3, 4, 5, 30],
      ],
      [
        'bulk',
        () =>
          write('POST', `${items}/_bulk`, {
            body: {
              operations: [
                { method: 'POST', body: { _id: 'f', n: 6 } },
                { method: 'DELETE', id: 'd' },
              ],
            },
          }),
        5,
        [2, 3, 5, 6, 30],
      ],
    ];
    for (const [name, step, count, ns] of steps) {
      await step();
      seen = await answers('items');
      expect([seen.count, seen.ns], name).to.deep.equal([count, ns]);
      expect(seen.missed, `${name}: the first answers after it come from the database`).to.equal(2);
    }

    // Another collection's write leaves these answers in place.
    await write('POST', path('others'), { body: { n: 1 } });
    seen = await answers('items');
    expect(seen.missed).to.equal(0);
  });

  it('keeps each tenant’s and each environment’s answers apart, for the same collection and question', async () => {
    const other = await server.tenant({ plan: 'team' });
    const live = (await tenant.newKey({ env: 'live' })).rawKey;
    const askers = [
      { key: tenant.key, project: tenant.project, docs: 1 },
      { key: live, project: tenant.project, docs: 2 },
      { key: other.key, project: other.project, docs: 3 },
    ];
    for (const { key, project, docs } of askers) {
      for (let i = 0; i < docs; i++) {
        const res = await server.request('POST', `/${project}/shared`, { key, body: { n: i } });
        expect(res.status).to.equal(201);
      }
    }
    // Each asks twice (the second from the cache); each sees only its own documents.
    for (let round = 0; round < 2; round++) {
      for (const { key, project, docs } of askers) {
        const count = await server.request('GET', `/${project}/shared?count=true`, { key });
        const page = await server.request('GET', `/${project}/shared?sort=n`, { key });
        expect([count.body.count, page.body.data.length]).to.deep.equal([docs, docs]);
      }
    }
  });

  it('keeps nothing with FOLIO_EMBEDDED_QUERY_CACHE_MB at 0', async () => {
    const off = await startTestServer({
      config: { metrics: { enabled: true, token: TOKEN }, embedded: { queryCacheMb: 0 } },
    });
    try {
      const t = await off.tenant();
      await off.request('POST', `/${t.project}/items`, { key: t.key, body: { n: 1 } });
      for (let i = 0; i < 3; i++) {
        expect(
          (await off.request('GET', `/${t.project}/items?count=true`, { key: t.key })).body.count,
        ).to.equal(1);
      }
      const text = (await off.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } }))
        .text;
      expect(text).to.match(/^folio_sqlite_query_cache_hits_total 0$/m);
      expect(text).to.match(/^folio_sqlite_query_cache_misses_total 3$/m);
    } finally {
      await off.close();
    }
  });
});
