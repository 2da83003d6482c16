/**
 * The list route answers `ListingService.listJson`: a page without `select` is written from the
 * store's own texts of its documents (embedded store: `findJson`). Whatever the query, the text
 * must be the very bytes `JSON.stringify` gives of `list`'s answer, cursors included.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

describe('list answers as text', () => {
  let server: TestServer;
  let tenant: Tenant;

  before(async () => {
    server = await startTestServer();
    tenant = await server.tenant();
    const docs = Array.from({ length: 23 }, (_, i) => ({
      _id: `d${String(i).padStart(2, '0')}`,
      group: `g${i % 3}`,
      // Ties, a string among the numbers, a missing value, an array: every sort bracket.
      price: i === 5 ? 'n/a' : i === 7 ? undefined : i === 9 ? [3, 1] : (i * 7) % 10,
      note: i % 4 === 0 ? 'quote " and \\ and \u2028 é' : null,
      nested: { n: i, list: [i, { k: 'v' }] },
    }));
    for (const doc of docs) {
      const res = await server.request('POST', `/${tenant.project}/things`, { key: tenant.key, body: doc });
      expect(res.status).to.equal(201);
    }
    // A later version too: the metadata of a rewritten document.
    const patched = await server.request('PATCH', `/${tenant.project}/things/d03`, {
      key: tenant.key,
      body: { note: 'patched' },
      contentType: 'application/merge-patch+json',
    });
    expect(patched.status).to.equal(200);
  });

  after(() => server.close());

  async function both(query: Record<string, string>): Promise<{ text: string; object: string }> {
    const { listing, apiKeys } = server.running.services;
    const key = await apiKeys.authenticate(tenant.key);
    const text = await listing.listJson(key, 'things', query);
    const object = JSON.stringify(await listing.list(key, 'things', query));
    return { text, object };
  }

  it('equals JSON.stringify of the list answer for any query, page after page', async () => {
    const query = fc.record(
      {
        sort: fc.constantFrom('price', '-price', 'group,-price', '_id', '-$updatedAt'),
        limit: fc.integer({ min: 1, max: 8 }).map(String),
        offset: fc.integer({ min: 0, max: 25 }).map(String),
        'filter[group]': fc.constantFrom('g0', 'g1', 'g2'),
        total: fc.constantFrom('exact', 'estimate', 'none'),
        select: fc.constantFrom('price', 'group,nested.n'),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const first = await both(q);
        expect(first.text).to.equal(first.object);
        // Follow the cursor, as a client pages (no offset beside `after`).
        let next = (JSON.parse(first.text) as { meta: { next: string | null } }).meta.next;
        const { offset: _offset, ...rest } = q;
        for (let pages = 0; next !== null && pages < 3; pages++) {
          const page = await both({ ...rest, after: next });
          expect(page.text).to.equal(page.object);
          next = (JSON.parse(page.text) as { meta: { next: string | null } }).meta.next;
        }
      }),
      { numRuns: 60 },
    );
  });

  it('equals it for counts, plans and a collection that does not exist', async () => {
    const queries: Record<string, string>[] = [
      { count: 'true' },
      { count: 'true', 'filter[group]': 'g1' },
      { explain: 'true' },
    ];
    for (const q of queries) {
      const { text, object } = await both(q);
      expect(text).to.equal(object);
    }
    const { listing, apiKeys } = server.running.services;
    const key = await apiKeys.authenticate(tenant.key);
    expect(await listing.listJson(key, 'none_here', {})).to.equal(
      JSON.stringify(await listing.list(key, 'none_here', {})),
    );
  });
});
