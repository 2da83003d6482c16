import { expect } from 'chai';
import type { Json } from '../support/server.js';
import { forEachStore, readOnlyKey, tenantCalls } from '../support/stores.js';

forEachStore(
  'declared indexes (/{ns}/{collection}/_indexes)',
  (ctx) => {
    const { at, call } = tenantCalls(ctx);
    const readOnly = readOnlyKey(ctx);

    it('creates, lists and drops an index; read-only keys may list, not create or drop', async () => {
      const created = await call('POST', at('people', '/_indexes'), { fields: [{ path: 'age' }] });
      expect(created.status, created.text).to.equal(201);
      expect(created.body).to.include({ name: 'age_1', unique: false, state: 'ready' });
      expect(created.body.fields).to.deep.equal([{ path: 'age', order: 1 }]);
      const listed = await call('GET', at('people', '/_indexes'), undefined, readOnly());
      expect(listed.status).to.equal(200);
      expect(listed.body.data.map((i: Json) => i.name)).to.deep.equal(['age_1']);
      expect(
        (await call('POST', at('people', '/_indexes'), { fields: [{ path: 'x' }] }, readOnly())).status,
      ).to.equal(403);
      expect((await call('DELETE', at('people', '/_indexes/age_1'), undefined, readOnly())).status).to.equal(
        403,
      );
      expect((await call('DELETE', at('people', '/_indexes/age_1'))).status).to.equal(204);
      expect((await call('DELETE', at('people', '/_indexes/age_1'))).status).to.equal(404);
      expect((await call('GET', at('people', '/_indexes'))).body.data).to.deep.equal([]);
    });

    it('refuses bad declarations with 400 and a taken name or the same fields with 409', async () => {
      const bad: Json[] = [
        {},
        { fields: [] },
        { fields: [{ path: 'a' }, { path: 'b' }, { path: 'c' }, { path: 'd' }] },
        { fields: [{ path: '_id' }] },
        { fields: [{ path: '$createdAt' }] },
        { fields: [{ path: '$where' }] },
        { fields: [{ path: 'a..b' }] },
        { fields: [{ path: 'a', order: 2 }] },
        { fields: [{ path: 'a' }, { path: 'a', order: -1 }] },
        { fields: [{ path: 'a' }], name: '../x' },
        { fields: [{ path: 'a' }], unique: 'yes' },
        { fields: [{ path: 'a' }], extra: 1 },
        { fields: [{ path: 'a' }], name: 'folio_createdAt_id' },
        { fields: [{ path: 'a' }], name: 'FOLIO_x' },
      ];
      for (const body of bad) {
        const res = await call('POST', at('bad', '/_indexes'), body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
      }
      expect(
        (await call('POST', at('bad', '/_indexes'), { fields: [{ path: 'a' }], name: 'ix' })).status,
      ).to.equal(201);
      const taken = await call('POST', at('bad', '/_indexes'), { fields: [{ path: 'b' }], name: 'ix' });
      expect(taken.status).to.equal(409);
      const same = await call('POST', at('bad', '/_indexes'), { fields: [{ path: 'a' }] });
      expect(same.status).to.equal(409);
      expect(same.body.error.details).to.deep.equal({ index: 'ix' });
    });

    it('limits indexes per collection to the plan’s maximum (3 here)', async () => {
      for (const path of ['a', 'b', 'c']) {
        expect((await call('POST', at('limited', '/_indexes'), { fields: [{ path }] })).status).to.equal(201);
      }
      const over = await call('POST', at('limited', '/_indexes'), { fields: [{ path: 'd' }] });
      expect(over.status).to.equal(403);
      expect(over.body.error).to.include({ code: 'plan_limit_exceeded' });
      expect(over.body.error.details).to.include({ max: 3 });
      // Per collection: another collection starts from zero.
      expect((await call('POST', at('other', '/_indexes'), { fields: [{ path: 'd' }] })).status).to.equal(
        201,
      );
    });

    it('racing declarations never pass the maximum: of 8 at once on an empty collection, exactly 3 are created', async () => {
      const answers = await Promise.all(
        ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].map((path) =>
          call('POST', at('raced', '/_indexes'), { fields: [{ path }] }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).to.deep.equal([201, 201, 201, 403, 403, 403, 403, 403]);
      const listed = await call('GET', at('raced', '/_indexes'));
      expect(listed.body.data).to.have.length(3);
    });

    it('a unique index refuses a repeated value with 409 naming the index and the document holding it', async () => {
      const first = await call('POST', at('users'), { email: 'a@x.io' });
      await call('POST', at('users'), { note: 'no email' });
      const index = await call('POST', at('users', '/_indexes'), {
        fields: [{ path: 'email' }],
        unique: true,
        name: 'email_unique',
      });
      expect(index.body).to.include({ state: 'ready', unique: true });
      const repeated = await call('POST', at('users'), { email: 'a@x.io' });
      expect(repeated.status).to.equal(409);
      expect(repeated.body.error).to.include({ code: 'unique_violation' });
      expect(repeated.body.error.details).to.deep.equal({
        index: 'email_unique',
        conflictingId: first.body._id,
      });
      const other = await call('POST', at('users'), { email: 'b@x.io' });
      expect(other.status).to.equal(201);
      const moved = await call('PUT', at('users', `/${other.body._id}`), { email: 'a@x.io' });
      expect(moved.status).to.equal(409);
      // Documents without the field are not constrained; the refused writes wrote nothing.
      expect((await call('POST', at('users'), { note: 'also none' })).status).to.equal(201);
      const list = await call('GET', at('users', '?filter[email]=a@x.io'));
      expect(list.body.data.map((d: Json) => d._id)).to.deep.equal([first.body._id]);
      expect((await call('GET', at('users', `/${other.body._id}`))).body.email).to.equal('b@x.io');
    });

    it('in a bulk request, the operation a unique index refuses is that item’s 409; the others stand', async () => {
      await call('POST', at('bulked', '/_indexes'), { fields: [{ path: 'code' }], unique: true });
      const res = await call('POST', at('bulked', '/_bulk'), {
        operations: [
          { method: 'POST', body: { code: 'A' } },
          { method: 'POST', body: { code: 'A' } },
          { method: 'POST', body: { code: 'B' } },
        ],
      });
      expect(res.status, res.text).to.equal(207);
      expect(res.body.results.map((r: Json) => r.status)).to.deep.equal([201, 409, 201]);
      expect(res.body.results[1].error.code).to.equal('unique_violation');
    });

    it('200 concurrent writers of one value under a unique index: exactly one wins', async () => {
      await call('POST', at('race', '/_indexes'), { fields: [{ path: 'slot' }], unique: true });
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => call('POST', at('race'), { slot: 'only', writer: i })),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).to.have.length(1);
      expect(statuses.filter((s) => s === 409)).to.have.length(199);
      expect((await call('GET', at('race', '?count=true'))).body).to.deep.equal({ count: 1 });
    });

    it('a unique build over duplicate values fails, naming the duplicates', async () => {
      const ids: string[] = [];
      for (const v of [1, 2, 1, 3, 1]) ids.push((await call('POST', at('dups'), { v })).body._id);
      const res = await call('POST', at('dups', '/_indexes'), { fields: [{ path: 'v' }], unique: true });
      expect(res.status).to.equal(201);
      expect(res.body.state).to.equal('failed');
      expect(res.body.failure.ids).to.deep.equal([ids[0], ids[2], ids[4]].sort());
      // A failed index refuses nothing.
      expect((await call('POST', at('dups'), { v: 2 })).status).to.equal(201);
    });

    it('a unique index constrains null like any value, never a missing field (both stores alike)', async () => {
      const index = await call('POST', at('nulls', '/_indexes'), { fields: [{ path: 'tag' }], unique: true });
      expect(index.body).to.include({ state: 'ready' });
      const first = await call('POST', at('nulls'), { tag: null });
      expect(first.status).to.equal(201);
      const second = await call('POST', at('nulls'), { tag: null });
      expect(second.status).to.equal(409);
      expect(second.body.error.details).to.deep.equal({ index: 'tag_1', conflictingId: first.body._id });
      for (let i = 0; i < 2; i++)
        expect((await call('POST', at('nulls'), { other: i })).status).to.equal(201);
      expect((await call('POST', at('nulls'), { tag: 'x' })).status).to.equal(201);
    });

    it('a unique build over two nulls fails naming them; documents without the field do not count', async () => {
      const ids: string[] = [];
      for (const body of [{ t: null }, { u: 1 }, { t: null }, { u: 2 }, { t: 0 }]) {
        ids.push((await call('POST', at('nulldups'), body)).body._id);
      }
      const res = await call('POST', at('nulldups', '/_indexes'), { fields: [{ path: 't' }], unique: true });
      expect(res.body.state).to.equal('failed');
      expect(res.body.failure.ids).to.deep.equal([ids[0], ids[2]].sort());
    });

    it('explain=true shows the index used and the documents examined; read-only keys may not explain', async () => {
      for (let i = 0; i < 40; i++) await call('POST', at('planned'), { k: i % 20, i });
      const before = await call('GET', at('planned', '?filter[k]=7&explain=true'));
      expect(before.status, before.text).to.equal(200);
      expect(before.body.plan).to.include({ index: null, scan: true, documentsExamined: 40, returned: 2 });
      await call('POST', at('planned', '/_indexes'), { fields: [{ path: 'k' }], name: 'by_k' });
      const after = await call('GET', at('planned', '?filter[k]=7&explain=true'));
      expect(after.body.plan).to.include({ index: 'by_k', scan: false, documentsExamined: 2, returned: 2 });
      const refused = await call('GET', at('planned', '?filter[k]=7&explain=true'), undefined, readOnly());
      expect(refused.status).to.equal(403);
      expect(
        (await call('GET', at('planned', '?filter[k]=7&explain=true'), undefined, readOnly())).body.error
          .code,
      ).to.equal('forbidden');
      expect((await call('GET', at('planned', '?explain=yes'))).status).to.equal(400);
    });

    it('answers filters on an indexed field exactly as without the index', async () => {
      const values = [5, '5', [1, 5], true, null, 'x', 7.5, [], { a: 1 }, -2];
      for (const n of values) await call('POST', at('same'), { n });
      await call('POST', at('same'), { other: 1 });
      const queries = [
        'filter[n]=5',
        'filter[n][in]=1,x,true',
        'filter[n][gt]=4',
        'filter[n][lte]=5',
        'filter[n][lt]=y',
        'filter[n][gte]=a',
        'filter[n][exists]=false',
        'filter[n][exists]=true',
        'filter[n]=null',
        'filter[n][neq]=5',
      ];
      const before = new Map<string, string[]>();
      for (const q of queries) {
        before.set(
          q,
          (await call('GET', at('same', `?${q}&sort=n`))).body.data.map((d: Json) => d._id),
        );
      }
      expect((await call('POST', at('same', '/_indexes'), { fields: [{ path: 'n' }] })).status).to.equal(201);
      for (const q of queries) {
        const after = (await call('GET', at('same', `?${q}&sort=n`))).body.data.map((d: Json) => d._id);
        expect(after, q).to.deep.equal(before.get(q));
      }
    });
  },
  { config: { plans: { free: { maxIndexes: 3 } } } },
);
