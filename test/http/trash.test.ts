import { expect } from 'chai';
import type { Json } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { forEachStore, readOnlyKey, tenantCalls } from '../support/stores.js';

forEachStore(
  'trash (/{ns}/{collection}/_trash)',
  (ctx) => {
    const { at, call } = tenantCalls(ctx);
    const readOnly = readOnlyKey(ctx);

    async function documentWithHistory(collection: string, id: string): Promise<void> {
      expect((await call('PUT', at(collection, `/${id}`), { step: 1 })).status).to.equal(201);
      expect((await call('PUT', at(collection, `/${id}`), { step: 2 })).status).to.equal(200);
      expect((await call('PUT', at(collection, `/${id}`), { step: 3 })).status).to.equal(200);
    }

    it('DELETE moves the document and its whole history to the trash; read-only keys may read it', async () => {
      await documentWithHistory('notes', 'n1');
      expect((await call('DELETE', at('notes', '/n1'))).status).to.equal(204);
      expect((await call('GET', at('notes', '/n1'))).status).to.equal(404);
      const listed = await call('GET', at('notes', '/_trash'), undefined, readOnly());
      expect(listed.status, listed.text).to.equal(200);
      expect(listed.body.data).to.have.length(1);
      const item = listed.body.data[0];
      expect(item).to.include({ _id: 'n1', version: 3 });
      expect(item.deletedBy).to.match(/^folio_sk_test_\.\.\.[A-Za-z0-9]{4}$/);
      // The Pro plan keeps 30 days (config/default.json).
      expect(Date.parse(item.expiresAt) - Date.parse(item.deletedAt)).to.equal(30 * 24 * 60 * 60 * 1000);
      const one = await call('GET', at('notes', '/_trash/n1'), undefined, readOnly());
      expect(one.body.document).to.include({ step: 3, $version: 3 });
      expect(one.body.versions.map((v: Json) => v.version)).to.deep.equal([3, 2, 1]);
      expect((await call('POST', at('notes', '/_trash/n1/restore'), undefined, readOnly())).status).to.equal(
        403,
      );
      expect((await call('DELETE', at('notes', '/_trash/n1'), undefined, readOnly())).status).to.equal(403);
    });

    it('restore brings it back as a new version with a continuous history and one document.created event', async () => {
      await documentWithHistory('restored', 'r1');
      const stream = new StreamClient(`${ctx.server.url}${at('restored', '/_stream')}`, ctx.tenant.key);
      await stream.opened;
      try {
        expect((await call('DELETE', at('restored', '/r1'))).status).to.equal(204);
        const res = await call('POST', at('restored', '/_trash/r1/restore'));
        expect(res.status, res.text).to.equal(201);
        expect(res.body).to.include({ _id: 'r1', step: 3, $version: 4 });
        expect(res.headers.get('x-document-version')).to.equal('4');
        const versions = (await call('GET', at('restored', '/r1/versions'))).body.versions;
        expect(versions.map((v: Json) => [v.version, v.operation])).to.deep.equal([
          [4, 'restore'],
          [3, 'update'],
          [2, 'update'],
          [1, 'create'],
        ]);
        expect((await call('GET', at('restored', '/_trash/r1'))).status).to.equal(404);
        const events = await stream.documents(2);
        expect(events.map((e) => e.type)).to.deep.equal(['document.deleted', 'document.created']);
        expect(events[1]!.data.document).to.include({ _id: 'r1', step: 3, $version: 4 });
        // The next write continues the history.
        expect((await call('PUT', at('restored', '/r1'), { step: 5 })).body.$version).to.equal(5);
      } finally {
        stream.close();
      }
    });

    it('restoring into an id taken again meanwhile is a 409; the trash keeps the entry', async () => {
      await documentWithHistory('reused', 'u1');
      await call('DELETE', at('reused', '/u1'));
      expect((await call('PUT', at('reused', '/u1'), { other: true })).status).to.equal(201);
      const res = await call('POST', at('reused', '/_trash/u1/restore'));
      expect(res.status).to.equal(409);
      expect(res.body.error.code).to.equal('conflict');
      expect((await call('GET', at('reused', '/_trash/u1'))).status).to.equal(200);
      expect((await call('GET', at('reused', '/u1'))).body).to.include({ other: true, $version: 1 });
      expect((await call('POST', at('reused', '/_trash/none/restore'))).status).to.equal(404);
    });

    it('lists newest first with a cursor, page by page', async () => {
      for (const id of ['p1', 'p2', 'p3', 'p4', 'p5']) {
        await call('PUT', at('paged', `/${id}`), { id });
        await call('DELETE', at('paged', `/${id}`));
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const query: string = cursor ? `?limit=2&after=${cursor}` : '?limit=2';
        const page = await call('GET', at('paged', `/_trash${query}`));
        expect(page.status, page.text).to.equal(200);
        expect(page.body.data.length).to.be.at.most(2);
        seen.push(...page.body.data.map((d: Json) => d._id));
        cursor = page.body.meta.next;
        expect(page.body.meta.hasMore).to.equal(cursor !== null);
      } while (cursor);
      expect(seen).to.deep.equal(['p5', 'p4', 'p3', 'p2', 'p1']);
      expect((await call('GET', at('paged', '/_trash?after=nonsense'))).status).to.equal(400);
      expect((await call('GET', at('paged', '/_trash?limit=101'))).status).to.equal(400);
      expect((await call('GET', at('paged', '/_trash?other=1'))).status).to.equal(400);
    });

    it('erases for good: DELETE on the trash entry, and DELETE ?purge=true on the document', async () => {
      await documentWithHistory('erased', 'e1');
      await call('DELETE', at('erased', '/e1'));
      expect((await call('DELETE', at('erased', '/_trash/e1'))).status).to.equal(204);
      expect((await call('GET', at('erased', '/_trash/e1'))).status).to.equal(404);
      expect((await call('DELETE', at('erased', '/_trash/e1'))).status).to.equal(404);

      await documentWithHistory('erased', 'e2');
      expect((await call('DELETE', at('erased', '/e2?purge=true'))).status).to.equal(204);
      expect((await call('GET', at('erased', '/e2'))).status).to.equal(404);
      expect((await call('GET', at('erased', '/_trash/e2'))).status).to.equal(404);
      expect((await call('GET', at('erased', '/e2/versions'))).status).to.equal(404);
      expect((await call('DELETE', at('erased', '/e3?purge=maybe'))).status).to.equal(400);
    });

    it('bulk deletes go to the trash; restore checks the schema of now', async () => {
      await call('PUT', at('bulkdel', '/b1'), { n: 'text' });
      const res = await call('POST', at('bulkdel', '/_bulk'), {
        operations: [{ method: 'DELETE', id: 'b1' }],
      });
      expect(res.body.results[0]).to.include({ status: 204, ok: true });
      expect((await call('GET', at('bulkdel', '/_trash/b1'))).status).to.equal(200);
      await call('PUT', at('bulkdel', '/_schema'), {
        schema: { type: 'object', properties: { n: { type: 'number' } } },
      });
      const restored = await call('POST', at('bulkdel', '/_trash/b1/restore'));
      expect(restored.status).to.equal(422);
      expect((await call('GET', at('bulkdel', '/_trash/b1'))).status).to.equal(200);
    });

    it('import with onConflict=overwrite keeps the overwritten content in the history', async () => {
      await call('PUT', at('imports', '/o1'), { v: 'before' });
      const res = await call('POST', at('imports', '/_import?onConflict=overwrite'), [
        { _id: 'o1', v: 'after' },
      ]);
      expect(res.body).to.include({ imported: 1 });
      const v1 = await call('GET', at('imports', '/o1/versions/1'));
      expect(v1.body.v).to.equal('before');
    });
  },
  { plan: 'pro' },
);
