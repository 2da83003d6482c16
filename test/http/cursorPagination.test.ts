import { expect } from 'chai';
import { parseListQuery } from '../../src/query/listQuery.js';
import type { FolioDocument, JsonObject } from '../../src/store/port.js';
import { toStored } from '../../src/store/storedForm.js';
import { oracleFind } from '../query/mingoOracle.js';
import type { Json } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

/** Sort values of the kinds a cursor carries: numbers, strings, null, missing, leaf arrays, booleans. */
function seedDoc(i: number): JsonObject {
  const doc: JsonObject = { i };
  const n = [i % 7, null, [i % 5, 20 - (i % 9)], -i, undefined, 2.5][i % 6];
  if (n !== undefined) doc.n = n;
  if (i % 4 !== 0) doc.s = i % 3 === 0 ? `w${i % 6}` : i % 10;
  if (i % 5 !== 1) doc.flag = i % 2 === 0;
  doc.a = i % 3 === 0 ? { b: `k${i % 4}` } : { c: 1 };
  return doc;
}

const SORTS = ['n', '-n', 's,-n', '-s', 'a.b,n', 'flag,-s', '-$createdAt', 'i'];

forEachStore(
  'cursor pagination (after=)',
  (ctx) => {
    const path = (collection = 'walk') => `/${ctx.tenant.project}/${collection}`;
    const get = (query: string, collection?: string) =>
      ctx.server.request('GET', `${path(collection)}${query}`, { key: ctx.tenant.key });
    const post = async (body: JsonObject, collection?: string): Promise<FolioDocument> => {
      const res = await ctx.server.request('POST', path(collection), { key: ctx.tenant.key, body });
      expect(res.status, res.text).to.equal(201);
      return res.body;
    };
    /** The 36 documents every walk starts from, in a collection of its own. */
    const seedWalk = async (collection?: string) => {
      const docs: FolioDocument[] = [];
      for (let i = 0; i < 36; i++) docs.push(await post(seedDoc(i), collection));
      return docs;
    };

    before(async () => {
      await seedWalk();
    });

    SORTS.forEach((sort, walk) => {
      it(`a walk sorted by ${sort} while documents are inserted skips and repeats nothing, in MongoDB's order`, async () => {
        // Its own collection: each walk doubles what it walks, so walks sharing one would depend
        // on how many ran before.
        const collection = `walk${walk}`;
        const initial = await seedWalk(collection);
        let inserted = 1000;
        const seen: string[] = [];
        let query = `?sort=${encodeURIComponent(sort)}&limit=5`;
        let ended = false;
        for (let pages = 0; pages < 100 && !ended; pages++) {
          const res = await get(query, collection);
          expect(res.status, res.text).to.equal(200);
          if (pages > 0) expect(res.body.meta, 'a cursor page has no offset').to.not.have.property('offset');
          seen.push(...res.body.data.map((d: Json) => d._id as string));
          // Writes between pages: new documents land before, inside and after the walk's position.
          await post(seedDoc(inserted++), collection);
          await post(seedDoc(inserted++), collection);
          ended = !res.body.meta.hasMore;
          if (ended) expect(res.body.meta.next).to.equal(null);
          else query = `?sort=${encodeURIComponent(sort)}&limit=5&after=${res.body.meta.next}`;
        }
        expect(ended, 'the walk reached its last page').to.equal(true);
        expect(new Set(seen).size, 'no document repeated').to.equal(seen.length);
        const initialIds = new Set(initial.map((d) => d._id));
        const walkedInitial = seen.filter((id) => initialIds.has(id));
        const expected = oracleFind(
          initial.map((d) => toStored(d)),
          parseListQuery({ sort, limit: '1000' }),
        ).ids;
        expect(walkedInitial, 'every document present from the start, once, in order').to.deep.equal(
          expected,
        );
      });
    });

    it('keeps select: the sort fields it needs for the cursor are not returned', async () => {
      const res = await get('?sort=-n&limit=3&select=i');
      expect(res.status).to.equal(200);
      for (const doc of res.body.data) expect(Object.keys(doc).sort()).to.deep.equal(['_id', 'i']);
      const next = await get(`?sort=-n&limit=3&select=i&after=${res.body.meta.next}`);
      expect(next.status).to.equal(200);
      expect(next.body.data).to.have.length(3);
    });

    it('is not subject to the plan’s offset maximum (5 here), which offset still is', async () => {
      let query = '?limit=2';
      let pages = 0;
      for (; pages < 10; pages++) {
        const res = await get(query);
        expect(res.status, res.text).to.equal(200);
        query = `?limit=2&after=${res.body.meta.next}`;
      }
      expect(pages).to.equal(10);
      expect((await get('?limit=2&offset=5')).status).to.equal(200);
      expect((await get('?limit=2&offset=6')).status).to.equal(403);
    });

    it('refuses after with offset, a malformed or tampered cursor, and a cursor of another sort with 400 invalid_query', async () => {
      const first = await get('?sort=n&limit=2');
      const cursor = first.body.meta.next as string;
      const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      const tampered = (change: (c: Json) => unknown) =>
        Buffer.from(JSON.stringify(change(structuredClone(decoded))), 'utf8').toString('base64url');
      const bad = [
        `?sort=n&after=${cursor}&offset=0`,
        '?sort=n&after=',
        '?sort=n&after=%%%',
        '?sort=n&after=not-json',
        `?sort=n&after=${'A'.repeat(9000)}`,
        `?sort=-n&after=${cursor}`,
        `?after=${cursor}`,
        `?sort=n&after=${tampered((c) => ({ ...c, k: [{ $gt: 1 }] }))}`,
        `?sort=n&after=${tampered((c) => ({ ...c, k: [] }))}`,
        `?sort=n&after=${tampered((c) => ({ ...c, id: 5 }))}`,
        `?sort=n&after=${tampered((c) => ({ ...c, extra: 1 }))}`,
        `?sort=n&after=${tampered(() => [1, 2])}`,
        `?sort=n&after=${tampered(() => null)}`,
      ];
      for (const query of bad) {
        const res = await get(query);
        expect(res.status, `${query}: ${res.text}`).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_query');
      }
    });
  },
  { config: { plans: { free: { maxOffset: 5 } } } },
);
