/**
 * Key rules at their boundaries on the surfaces beyond get and list (issue 45): a restore of a
 * version outside the rule, a bulk and an import on both sides of it, the trash, and streams:
 * a document leaving and entering view, a stream opened by ticket, one resumed across a rule
 * change. The generated matrix (keyRulesMatrix.test.ts) covers the same surfaces at random.
 */
import { expect } from 'chai';
import { TRASH_SCAN_MAX } from '../../src/services/trash/index.js';
import type { KeyRule } from '../../src/store/port.js';
import { StreamClient } from '../support/sse.js';
import { readSse } from '../support/sseText.js';
import { forEachStore, tenantCalls } from '../support/stores.js';

const PUBLISHED: KeyRule[] = [{ collections: ['posts'], access: 'write', filter: { published: true } }];

forEachStore(
  'key rules on versions, trash, bulk, import and streams',
  (ctx) => {
    const { at, call } = tenantCalls(ctx);
    let key = '';
    let keyId = '';
    const setRules = async (rules: KeyRule[]) => {
      const res = await ctx.server.request('PATCH', `/api/keys/${keyId}`, {
        session: ctx.tenant.session,
        body: { rules },
      });
      expect(res.status, res.text).to.equal(200);
    };

    before(async () => {
      ({ rawKey: key, id: keyId } = await ctx.tenant.newKey({ rules: PUBLISHED }));
    });
    beforeEach(() => setRules(PUBLISHED));

    it('restoring a version outside the rule is 403 outside_rules and writes nothing; versions outside are 404', async () => {
      await call('PUT', at('posts', '/r1'), { published: false, title: 'draft' });
      await call('PUT', at('posts', '/r1'), { published: true, title: 'out' });
      const restore = await call('POST', at('posts', '/r1/versions/1/restore'), undefined, key);
      expect(restore.status).to.equal(403);
      expect(restore.body.error.code).to.equal('outside_rules');
      expect((await call('GET', at('posts', '/r1/versions'))).body.versions).to.have.length(2);
      // The draft is not the key's to read, nor to diff against.
      expect((await call('GET', at('posts', '/r1/versions/1'), undefined, key)).status).to.equal(404);
      expect(
        (await call('GET', at('posts', '/r1/versions/diff?from=1&to=2'), undefined, key)).status,
      ).to.equal(404);
      expect((await call('GET', at('posts', '/r1/versions/2'), undefined, key)).status).to.equal(200);
      // Unpublished now: the whole history is gone from the key's view, as if the document were.
      await call('PUT', at('posts', '/r1'), { published: false, title: 'hidden' });
      const versions = await call('GET', at('posts', '/r1/versions'), undefined, key);
      const missing = await call('GET', at('posts', '/nothing/versions'), undefined, key);
      expect(versions.status).to.equal(404);
      expect(versions.body).to.deep.equal(missing.body);
      expect((await call('POST', at('posts', '/r1/versions/2/restore'), undefined, key)).status).to.equal(
        404,
      );
    });

    it('a bulk mixing allowed and refused operations: each answered as alone, only the allowed written', async () => {
      await call('PUT', at('posts', '/b-hidden'), { published: false });
      await call('PUT', at('posts', '/b-shown'), { published: true });
      const operations = [
        { method: 'POST', id: 'b-new', body: { published: true } },
        { method: 'POST', id: 'b-draft', body: { published: false } },
        { method: 'PUT', id: 'b-hidden', body: { published: true } },
        { method: 'PATCH', id: 'b-shown', body: { published: false } },
        { method: 'DELETE', id: 'b-hidden' },
        { method: 'PATCH', id: 'b-shown', body: { title: 'kept in view' } },
      ];
      const res = await call('POST', at('posts', '/_bulk'), { operations }, key);
      expect(res.status).to.equal(207);
      expect(res.body.results.map((r: { status: number }) => r.status)).to.deep.equal([
        201, 403, 404, 403, 404, 200,
      ]);
      expect(res.body.results[1].error.code).to.equal('outside_rules');
      expect((await call('GET', at('posts', '/b-draft'))).status).to.equal(404);
      expect((await call('GET', at('posts', '/b-hidden'))).body).to.include({
        published: false,
        $version: 1,
      });
      expect((await call('GET', at('posts', '/b-shown'))).body).to.include({
        published: true,
        title: 'kept in view',
      });
    });

    it('an import with records on both sides: those outside are their records’ errors, the others are in', async () => {
      await call('PUT', at('posts', '/i-hidden'), { published: false });
      const records = [
        { _id: 'i-1', published: true },
        { _id: 'i-2', published: false },
        { _id: 'i-hidden', published: true },
        { _id: 'i-3', published: true },
      ];
      const res = await ctx.server.request('POST', at('posts', '/_import?onConflict=overwrite'), {
        key,
        rawBody: records.map((r) => JSON.stringify(r)).join('\n'),
        contentType: 'application/x-ndjson',
      });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.imported).to.equal(2);
      expect(res.body.errors.map((e: { index: number; code: string }) => [e.index, e.code])).to.deep.equal([
        [1, 'outside_rules'],
        [2, 'outside_rules'],
      ]);
      expect((await call('GET', at('posts', '/i-2'))).status).to.equal(404);
      expect((await call('GET', at('posts', '/i-hidden'))).body.$version).to.equal(1);
      expect((await call('GET', at('posts', '/i-3'))).status).to.equal(200);
    });

    it('the trash holds only what the key may see: listed, read, restored and erased', async () => {
      await call('PUT', at('trashed', '/t-shown'), { published: true });
      await call('PUT', at('trashed', '/t-hidden'), { published: false });
      await call('DELETE', at('trashed', '/t-shown'));
      await call('DELETE', at('trashed', '/t-hidden'));
      await setRules([{ collections: ['trashed'], access: 'write', filter: { published: true } }]);
      const list = await call('GET', at('trashed', '/_trash'), undefined, key);
      expect(list.body.data.map((d: { _id: string }) => d._id)).to.deep.equal(['t-shown']);
      expect(list.text).not.to.include('t-hidden');
      for (const [method, rest] of [
        ['GET', ''],
        ['POST', '/restore'],
        ['DELETE', ''],
      ] as const) {
        const hidden = await call(method, at('trashed', `/_trash/t-hidden${rest}`), undefined, key);
        const missing = await call(method, at('trashed', `/_trash/none${rest}`), undefined, key);
        expect(hidden.status, `${method} ${rest}`).to.equal(404);
        expect(hidden.body).to.deep.equal(missing.body);
      }
      expect((await call('POST', at('trashed', '/_trash/t-shown/restore'), undefined, key)).status).to.equal(
        201,
      );
      expect((await call('GET', at('trashed', '/_trash/t-hidden'))).status).to.equal(200);
    });

    it(`a trash list under a rule reads at most ${TRASH_SCAN_MAX} entries a request: a short page with next, then the rest`, async () => {
      await call('PUT', at('deep', '/shown'), { published: true });
      await call('DELETE', at('deep', '/shown'));
      // Deleted later, so listed first (newest deletion first): more hidden entries than one request reads.
      const ids = Array.from({ length: TRASH_SCAN_MAX + 50 }, (_, i) => `h${i}`);
      for (const method of ['PUT', 'DELETE'] as const) {
        for (let i = 0; i < ids.length; i += 100) {
          const operations = ids
            .slice(i, i + 100)
            .map((id) => (method === 'PUT' ? { method, id, body: { published: false } } : { method, id }));
          const done = await call('POST', at('deep', '/_bulk'), { operations });
          expect(done.body.summary, method).to.deep.include({ failed: 0 });
        }
      }
      await setRules([{ collections: ['deep'], access: 'read', filter: { published: true } }]);
      const first = await call('GET', at('deep', '/_trash'), undefined, key);
      expect(first.body.data).to.deep.equal([]);
      expect(first.body.meta.hasMore).to.equal(true);
      const second = await call('GET', at('deep', `/_trash?after=${first.body.meta.next}`), undefined, key);
      expect(second.body.data.map((d: { _id: string }) => d._id)).to.deep.equal(['shown']);
      expect(second.body.meta).to.deep.include({ hasMore: false, next: null });
    });

    it('a stream under a rule: entering is an update, leaving is document.removed with the id alone', async () => {
      await call('PUT', at('posts', '/s-old'), { published: true, title: 'before the stream' });
      await call('PUT', at('posts', '/s-never'), { published: false, title: 'secret' });
      const stream = new StreamClient(`${ctx.server.url}${at('posts', '/_stream')}`, key);
      await stream.opened;
      await call('PUT', at('posts', '/s-never'), { published: false, title: 'still secret' });
      await call('PUT', at('posts', '/s-old'), { published: false, title: 'secret now' });
      await call('PUT', at('posts', '/s-in'), { published: false, title: 'draft' });
      await call('PUT', at('posts', '/s-in'), { published: true, title: 'draft' });
      await call('PUT', at('posts', '/s-in'), { published: false, title: 'pulled' });
      await call('DELETE', at('posts', '/s-in'));
      await call('PUT', at('posts', '/s-end'), { published: true });
      const events = [];
      for (;;) {
        const event = await stream.next([
          'document.created',
          'document.updated',
          'document.deleted',
          'document.removed',
        ]);
        events.push([event.type, event.data.document]);
        if (event.data.document._id === 's-end') break;
      }
      stream.close();
      expect(events.map(([type, doc]) => [type, doc._id])).to.deep.equal([
        // s-old was in view before the stream opened: the store's history says so.
        ['document.removed', 's-old'],
        ['document.updated', 's-in'],
        // s-in was seen by this stream: its own memory says so.
        ['document.removed', 's-in'],
        ['document.created', 's-end'],
      ]);
      expect(events[0]![1]).to.deep.equal({ _id: 's-old' });
      expect(events[2]![1]).to.deep.equal({ _id: 's-in' });
      expect(JSON.stringify(events)).not.to.match(/secret|pulled|s-never/);
    });

    it('a stream by ticket sends only what the key may see', async () => {
      const minted = await call('POST', at('posts', '/_stream/tickets'), undefined, key);
      expect(minted.status).to.equal(201);
      const reading = readSse(`${ctx.server.url}${minted.body.url}`, '"_id":"k-end"');
      await new Promise((resolve) => setTimeout(resolve, 100));
      await call('PUT', at('posts', '/k-hidden'), { published: false });
      await call('PUT', at('posts', '/k-end'), { published: true });
      const text = await reading;
      expect(text).to.include('"_id":"k-end"');
      expect(text).not.to.include('k-hidden');
    });

    it('a change of rules closes the key’s streams (rules_changed); resumed, a stream applies the rules of now', async () => {
      const stream = new StreamClient(`${ctx.server.url}${at('posts', '/_stream')}`, key);
      await stream.opened;
      await call('PUT', at('posts', '/c-first'), { published: true, team: 'b' });
      const first = await stream.next(['document.created']);
      await setRules([{ collections: ['posts'], access: 'write', filter: { team: 'b' } }]);
      const closed = await stream.next(['stream.closed']);
      expect(closed.data.reason).to.equal('rules_changed');
      stream.close();
      await call('PUT', at('posts', '/c-published'), { published: true, team: 'a' });
      await call('PUT', at('posts', '/c-team'), { published: false, team: 'b' });
      const resumed = new StreamClient(`${ctx.server.url}${at('posts', '/_stream')}`, key, {
        lastEventId: first.id,
      });
      const event = await resumed.next(['document.created']);
      resumed.close();
      expect(event.data.document._id).to.equal('c-team');
    });
  },
  { plan: 'team' },
);
