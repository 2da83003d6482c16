import { expect } from 'chai';
import type { KeyRule } from '../../src/store/port.js';
import { forEachStore, tenantCalls } from '../support/stores.js';

forEachStore(
  'key rules',
  (ctx) => {
    const { at, call } = tenantCalls(ctx);
    const restricted = async (rules: KeyRule[], scope: 'read-write' | 'read-only' = 'read-write') =>
      (await ctx.tenant.newKey({ rules, scope })).rawKey;
    const setRules = (id: string, rules: KeyRule[] | null) =>
      ctx.server.request('PATCH', `/api/keys/${id}`, { session: ctx.tenant.session, body: { rules } });

    before(async () => {
      for (const [id, published] of [
        ['p1', true],
        ['p2', false],
        ['p3', true],
      ] as const) {
        expect((await call('PUT', at('posts', `/${id}`), { published, n: id.length })).status).to.equal(201);
      }
      expect((await call('PUT', at('customers', '/c1'), { name: 'Ada' })).status).to.equal(201);
      expect((await call('PUT', at('public_news', '/n1'), { title: 'x' })).status).to.equal(201);
    });

    it('a prefix pattern reaches names starting with its prefix, not a character less', async () => {
      const key = await restricted([{ collections: ['public_*'], access: 'read' }]);
      expect((await call('GET', at('public_news', '/n1'), undefined, key)).status).to.equal(200);
      expect((await call('GET', at('public_'), undefined, key)).status).to.equal(200);
      expect((await call('GET', at('public'), undefined, key)).status).to.equal(404);
      expect((await call('GET', at('publicnews'), undefined, key)).status).to.equal(404);
    });

    it('out of reach answers 404 on every surface, the same whether the collection exists or not', async () => {
      const key = await restricted([{ collections: ['posts'], access: 'write' }]);
      const surfaces = [
        ['GET', ''],
        ['GET', '/c1'],
        ['POST', ''],
        ['GET', '/c1/versions'],
        ['GET', '/_trash'],
        ['GET', '/_export'],
        ['GET', '/_indexes'],
        ['GET', '/_schema'],
        ['GET', '/_openapi'],
        ['GET', '/_webhooks'],
        ['POST', '/_stream/tickets'],
        ['POST', '/_bulk'],
        ['POST', '/_import'],
        ['GET', '/_stream'],
      ] as const;
      for (const [method, rest] of surfaces) {
        const body = method === 'POST' ? (rest === '/_bulk' ? [] : {}) : undefined;
        const existing = await call(method, at('customers', rest), body, key);
        const missing = await call(method, at('nowhere', rest), body, key);
        expect(existing.status, `${method} ${rest}`).to.equal(404);
        expect(existing.body, `${method} ${rest}`).to.deep.equal(missing.body);
      }
    });

    it('a read rule reads but a write is 403 collection_access naming the collection; webhooks need write', async () => {
      const key = await restricted([{ collections: ['posts'], access: 'read' }]);
      expect((await call('GET', at('posts', '/p1'), undefined, key)).status).to.equal(200);
      const write = await call('POST', at('posts'), { published: true }, key);
      expect(write.status).to.equal(403);
      expect(write.body.error).to.deep.include({
        code: 'collection_access',
        details: { collection: 'posts', needed: 'write' },
      });
      expect((await call('GET', at('posts', '/_webhooks'), undefined, key)).body.error.code).to.equal(
        'collection_access',
      );
    });

    it('webhooks need write on every document: a rule filter, even with write, is 403 (a webhook would send the rest)', async () => {
      const hook = { url: 'https://example.com/hook', events: ['document.created'] };
      const filtered = await restricted([
        { collections: ['posts'], access: 'write', filter: { published: true } },
      ]);
      for (const [method, body] of [
        ['POST', hook],
        ['GET', undefined],
      ] as const) {
        const refused = await call(method, at('posts', '/_webhooks'), body, filtered);
        expect(refused.status, method).to.equal(403);
        expect(refused.body.error.details, method).to.deep.equal({
          collection: 'posts',
          needed: 'every document',
        });
      }
      const whole = await restricted([{ collections: ['posts'], access: 'write' }]);
      expect((await call('GET', at('posts', '/_webhooks'), undefined, whole)).status).to.equal(200);
    });

    it('documents outside the rule filter are absent from get, lists, counts and cursors', async () => {
      const key = await restricted([{ collections: ['posts'], access: 'read', filter: { published: true } }]);
      expect((await call('GET', at('posts', '/p2'), undefined, key)).status).to.equal(404);
      const list = await call('GET', at('posts', '?sort=_id'), undefined, key);
      expect(list.body.data.map((d: { _id: string }) => d._id)).to.deep.equal(['p1', 'p3']);
      expect(list.body.meta.total).to.equal(2);
      const filtered = await call('GET', at('posts', '?filter[n][gte]=2&count=true'), undefined, key);
      expect(filtered.body).to.deep.equal({ count: 2 });
      const first = await call('GET', at('posts', '?sort=_id&limit=1'), undefined, key);
      const second = await call(
        'GET',
        at('posts', `?sort=_id&limit=1&after=${first.body.meta.next}`),
        undefined,
        key,
      );
      expect(second.body.data.map((d: { _id: string }) => d._id)).to.deep.equal(['p3']);
      expect(second.body.meta.next).to.equal(null);
    });

    it('a filtered key counts only its view and gets no query plan, whose documentsExamined would count the rest', async () => {
      for (let i = 0; i < 40; i++) await call('POST', at('planned'), { team: 'abcd'[i % 4], k: i });
      await call('POST', at('planned', '/_indexes'), { fields: [{ path: 'team' }], name: 'by_team' });
      const key = await restricted([{ collections: ['planned'], access: 'write', filter: { team: 'a' } }]);
      // Its plan would count the documents the rule hides (documentsExamined): no plan for it.
      // That the joined filter still searches by_team is test/store/indexPlans.test.ts's.
      const explained = await call('GET', at('planned', '?filter[k][gte]=0&explain=true'), undefined, key);
      expect(explained.status).to.equal(403);
      expect(explained.body.error.details).to.deep.equal({ collection: 'planned', needed: 'every document' });
      const listed = await call('GET', at('planned', '?filter[k][gte]=0&count=true'), undefined, key);
      expect(listed.body).to.deep.equal({ count: 10 });
    });

    it('a write that would move a document into or out of view is 403 and writes nothing; outside is 404', async () => {
      const key = await restricted([
        { collections: ['posts'], access: 'write', filter: { published: true } },
      ]);
      const merge = 'application/merge-patch+json';
      const out = await call('PATCH', at('posts', '/p1'), { published: false }, key, merge);
      expect(out.status).to.equal(403);
      expect(out.body.error.code).to.equal('outside_rules');
      expect((await call('GET', at('posts', '/p1'))).body).to.include({ published: true, $version: 1 });
      expect((await call('POST', at('posts'), { published: false }, key)).status).to.equal(403);
      expect((await call('PUT', at('posts', '/p2'), { published: true }, key)).status).to.equal(404);
      expect((await call('DELETE', at('posts', '/p2'), undefined, key)).status).to.equal(404);
      expect((await call('GET', at('posts', '/p2'))).body.$version).to.equal(1);
      expect((await call('PATCH', at('posts', '/p3'), { n: 9 }, key, merge)).status).to.equal(200);
    });

    it('a read-only key cannot be given write rules, on create or on change', async () => {
      const created = await ctx.server.request('POST', '/api/keys', {
        session: ctx.tenant.session,
        body: {
          project: ctx.tenant.project,
          name: 'web',
          env: 'test',
          scope: 'read-only',
          rules: [{ collections: ['posts'], access: 'write' }],
        },
      });
      expect(created.status).to.equal(400);
      expect(created.body.error.details).to.deep.equal({ field: 'rules.0.access' });
      const { id } = await ctx.tenant.newKey({ scope: 'read-only' });
      expect((await setRules(id, [{ collections: ['posts'], access: 'write' }])).status).to.equal(400);
    });

    it('changed rules take effect at once without rotation; rotation keeps them', async () => {
      const { id, rawKey } = await ctx.tenant.newKey({ rules: [{ collections: ['posts'], access: 'read' }] });
      expect((await call('GET', at('customers', '/c1'), undefined, rawKey)).status).to.equal(404);
      const changed = await setRules(id, [{ collections: ['customers'], access: 'read' }]);
      expect(changed.status).to.equal(200);
      expect(changed.body.rules).to.deep.equal([{ collections: ['customers'], access: 'read' }]);
      expect((await call('GET', at('customers', '/c1'), undefined, rawKey)).status).to.equal(200);
      expect((await call('GET', at('posts', '/p1'), undefined, rawKey)).status).to.equal(404);
      const rotated = await ctx.server.request('POST', `/api/keys/${id}/rotate`, {
        session: ctx.tenant.session,
      });
      expect(rotated.body.apiKey.rules).to.deep.equal([{ collections: ['customers'], access: 'read' }]);
      expect((await setRules(id, null)).status, 'the rotated-away key is no longer active').to.equal(404);
    });

    it('changing a key’s rules closes its open streams with rules_changed', async () => {
      const { id, rawKey } = await ctx.tenant.newKey({ rules: [{ collections: ['posts'], access: 'read' }] });
      const aborted = new AbortController();
      const res = await fetch(`${ctx.server.url}${at('posts', '/_stream')}`, {
        headers: { Authorization: `Bearer ${rawKey}`, Accept: 'text/event-stream' },
        signal: aborted.signal,
      });
      expect(res.status).to.equal(200);
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let text = '';
      const until = async (pattern: RegExp) => {
        while (!pattern.test(text)) {
          const { value, done } = await reader.read();
          if (done) break;
          text += value;
        }
      };
      try {
        await until(/^retry/m);
        expect(
          (await setRules(id, [{ collections: ['posts'], access: 'read', filter: { n: 2 } }])).status,
        ).to.equal(200);
        await until(/"reason":"rules_changed"/);
        expect(text).to.match(/"reason":"rules_changed"/);
      } finally {
        aborted.abort();
      }
    });

    it('a bad rule is 400 invalid_body naming it', async () => {
      const { id } = await ctx.tenant.newKey();
      for (const rules of [
        [{ collections: ['pub*lic'], access: 'read' }],
        [{ collections: ['posts'], access: 'read', filter: { n: { near: 1 } } }],
        [{ collections: ['posts'], access: 'read', filter: { $version: 1 } }],
      ]) {
        const res = await setRules(id, rules as KeyRule[]);
        expect(res.status, JSON.stringify(rules)).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_body');
      }
    });
  },
  { plan: 'team' },
);
