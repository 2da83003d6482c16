import { expect } from 'chai';
import { forEachStore, type SuiteContext } from '../support/stores.js';

function client(ctx: SuiteContext) {
  return (method: string, p: string, options: Parameters<SuiteContext['server']['request']>[2] = {}) =>
    ctx.server.request(method, `/${ctx.tenant.project}${p}`, { key: ctx.tenant.key, ...options });
}

const merge = 'application/merge-patch+json';

forEachStore(
  'version history over HTTP (Pro)',
  (ctx) => {
    const req = client(ctx);

    async function docWithHistory(): Promise<string> {
      const id = (await req('POST', '/h', { body: { title: 'one', keep: true } })).body._id;
      await req('PUT', `/h/${id}`, { body: { title: 'two', keep: true } });
      await req('PATCH', `/h/${id}`, { body: { title: 'three', extra: 1 }, contentType: merge });
      return id;
    }

    it('lists versions newest first with operation, timestamp and a masked key hint', async () => {
      const id = await docWithHistory();
      const res = await req('GET', `/h/${id}/versions`);
      expect(res.status).to.equal(200);
      const { versions } = res.body;
      expect(versions.map((v: { version: number }) => v.version)).to.deep.equal([3, 2, 1]);
      expect(versions.map((v: { operation: string }) => v.operation)).to.deep.equal([
        'patch',
        'update',
        'create',
      ]);
      const hint = `folio_sk_test_...${ctx.tenant.key.slice(-4)}`;
      for (const v of versions) {
        expect(Object.keys(v).sort()).to.deep.equal(['apiKeyHint', 'operation', 'timestamp', 'version']);
        expect(v.apiKeyHint).to.equal(hint);
        expect(Date.parse(v.timestamp)).to.be.a('number').and.not.NaN;
      }
    });

    it('reads version N as the full document as it was', async () => {
      const id = await docWithHistory();
      const v1 = await req('GET', `/h/${id}/versions/1`);
      expect(v1.status).to.equal(200);
      expect(v1.body).to.include({ _id: id, title: 'one', keep: true, $version: 1 });
      expect(v1.headers.get('etag')).to.equal('"1"');
      const v3 = await req('GET', `/h/${id}/versions/3`);
      expect(v3.body).to.include({ title: 'three', extra: 1, $version: 3 });
      expect((await req('GET', `/h/${id}/versions/9`)).status).to.equal(404);
      const bad = await req('GET', `/h/${id}/versions/zero`);
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('invalid_query');
    });

    it('diffs two versions as changed/added/removed records with dot paths', async () => {
      const id = (await req('POST', '/d', { body: { a: 1, nested: { x: 1, gone: true }, tags: ['p'] } })).body
        ._id;
      await req('PUT', `/d/${id}`, { body: { a: 2, nested: { x: 1, y: 'new' }, tags: ['p', 'q'] } });
      const res = await req('GET', `/d/${id}/versions/diff?from=1&to=2`);
      expect(res.status).to.equal(200);
      expect(res.body.from).to.equal(1);
      expect(res.body.to).to.equal(2);
      const byPath = Object.fromEntries(res.body.changes.map((c: { path: string }) => [c.path, c]));
      expect(byPath.a).to.deep.equal({ path: 'a', type: 'changed', from: 1, to: 2 });
      expect(byPath['nested.y']).to.deep.equal({ path: 'nested.y', type: 'added', value: 'new' });
      expect(byPath['nested.gone']).to.deep.equal({ path: 'nested.gone', type: 'removed', value: true });
      expect(byPath['tags.1']).to.deep.equal({ path: 'tags.1', type: 'added', value: 'q' });
      expect(res.body.changes).to.have.length(4);
    });

    it('diff needs both from and to as version numbers (400) that exist (404)', async () => {
      const id = await docWithHistory();
      const missing = await req('GET', `/h/${id}/versions/diff?from=1`);
      expect(missing.status).to.equal(400);
      expect(missing.body.error.details.param).to.equal('to');
      expect((await req('GET', `/h/${id}/versions/diff?from=1&to=7`)).status).to.equal(404);
    });

    it('restore creates a new version with N content and never rewrites history', async () => {
      const id = await docWithHistory();
      const res = await req('POST', `/h/${id}/versions/1/restore`);
      expect(res.status).to.equal(200);
      expect(res.headers.get('x-document-version')).to.equal('4');
      expect(res.body).to.include({ _id: id, title: 'one', keep: true, $version: 4 });
      expect(res.body).to.not.have.property('extra');
      const versions = (await req('GET', `/h/${id}/versions`)).body.versions;
      expect(versions.map((v: { version: number }) => v.version)).to.deep.equal([4, 3, 2, 1]);
      expect(versions[0].operation).to.equal('restore');
      expect((await req('GET', `/h/${id}/versions/3`)).body.title).to.equal('three');
      expect((await req('POST', `/h/${id}/versions/42/restore`)).status).to.equal(404);
    });

    it('deleting a document deletes its history', async () => {
      const id = await docWithHistory();
      expect((await req('DELETE', `/h/${id}`)).status).to.equal(204);
      expect((await req('GET', `/h/${id}/versions`)).status).to.equal(404);
      expect((await req('GET', `/h/${id}/versions/1`)).status).to.equal(404);
      const recreated = await req('PUT', `/h/${id}`, { body: { fresh: true } });
      expect(recreated.status).to.equal(201);
      expect(recreated.body.$version).to.equal(1);
      const versions = (await req('GET', `/h/${id}/versions`)).body.versions;
      expect(versions).to.have.length(1);
    });

    it('50 concurrent PATCHes of different fields all land: $version 51, versions contiguous', async () => {
      const id = (await req('POST', '/race', { body: { start: true } })).body._id;
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          req('PATCH', `/race/${id}`, { body: { [`f${i}`]: i }, contentType: merge }),
        ),
      );
      expect(results.map((r) => r.status)).to.deep.equal(Array(50).fill(200));
      const doc = (await req('GET', `/race/${id}`)).body;
      expect(doc.$version).to.equal(51);
      for (let i = 0; i < 50; i++) expect(doc[`f${i}`]).to.equal(i);
      const versions = (await req('GET', `/race/${id}/versions`)).body.versions;
      // Pro keeps 50: exactly versions 51..2, no gaps.
      expect(versions.map((v: { version: number }) => v.version)).to.deep.equal(
        Array.from({ length: 50 }, (_, i) => 51 - i),
      );
    });
  },
  { plan: 'pro' },
);

forEachStore('version history on the Free plan', (ctx) => {
  const req = client(ctx);

  it('keeps only the newest 5 versions', async () => {
    const id = (await req('POST', '/p', { body: { n: 0 } })).body._id;
    for (let n = 1; n <= 7; n++) await req('PUT', `/p/${id}`, { body: { n } });
    const versions = (await req('GET', `/p/${id}/versions`)).body.versions;
    expect(versions.map((v: { version: number }) => v.version)).to.deep.equal([8, 7, 6, 5, 4]);
    expect((await req('GET', `/p/${id}/versions/3`)).status).to.equal(404);
    expect((await req('GET', `/p/${id}/versions/4`)).body.n).to.equal(3);
  });

  it('diff is 403 plan_feature_unavailable', async () => {
    const id = (await req('POST', '/p', { body: { n: 0 } })).body._id;
    await req('PUT', `/p/${id}`, { body: { n: 1 } });
    const res = await req('GET', `/p/${id}/versions/diff?from=1&to=2`);
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('plan_feature_unavailable');
  });
});

forEachStore(
  'version history on the Team plan',
  (ctx) => {
    const req = client(ctx);
    it('diff is available', async () => {
      const id = (await req('POST', '/t', { body: { n: 0 } })).body._id;
      await req('PUT', `/t/${id}`, { body: { n: 1 } });
      const res = await req('GET', `/t/${id}/versions/diff?from=2&to=1`);
      expect(res.status).to.equal(200);
      expect(res.body.changes).to.deep.equal([{ path: 'n', type: 'changed', from: 1, to: 0 }]);
    });

    it('keeps exactly the newest 100 versions', async () => {
      const id = (await req('POST', '/t100', { body: { n: 0 } })).body._id;
      for (let n = 1; n <= 101; n++) await req('PUT', `/t100/${id}`, { body: { n } });
      const versions = (await req('GET', `/t100/${id}/versions`)).body.versions;
      expect(versions.map((v: { version: number }) => v.version)).to.deep.equal(
        Array.from({ length: 100 }, (_, i) => 102 - i),
      );
      expect((await req('GET', `/t100/${id}/versions/2`)).status).to.equal(404);
      expect((await req('GET', `/t100/${id}/versions/3`)).body.n).to.equal(2);
    });
  },
  { plan: 'team' },
);
