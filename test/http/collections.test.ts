/** `GET /api/projects/{id}/collections?env=`: a project environment's collections with counts. */
import { expect } from 'chai';
import { forEachStore } from '../support/stores.js';

forEachStore('collections with document counts', (ctx) => {
  let projectId = '';
  const list = (env: string | undefined, session = ctx.tenant.session, id = projectId) =>
    ctx.server.request('GET', `/api/projects/${id}/collections${env === undefined ? '' : `?env=${env}`}`, {
      session,
    });

  before(async () => {
    const { key, project, session } = ctx.tenant;
    projectId = (await ctx.server.request('GET', '/api/projects', { session })).body.projects[0].id;
    const live = (await ctx.tenant.newKey({ env: 'live' })).rawKey;
    for (const [collection, count, k] of [
      ['notes', 3, key],
      ['Authors', 1, key],
      ['orders', 2, live],
    ] as const) {
      for (let i = 0; i < count; i++) {
        await ctx.server.request('POST', `/${project}/${collection}`, { key: k, body: { i } });
      }
    }
  });

  it('lists each environment’s collections by name with exact counts', async () => {
    const test = await list('test');
    expect(test.status).to.equal(200);
    expect(test.body).to.deep.equal({
      env: 'test',
      collections: [
        { name: 'Authors', documents: 1 },
        { name: 'notes', documents: 3 },
      ],
    });
    expect((await list('live')).body.collections).to.deep.equal([{ name: 'orders', documents: 2 }]);
  });

  it('follows writes and deletes: a count changes by one, an emptied collection leaves the list', async () => {
    const { key, project } = ctx.tenant;
    const doc = await ctx.server.request('POST', `/${project}/scratch`, { key, body: {} });
    expect((await list('test')).body.collections).to.deep.include({ name: 'scratch', documents: 1 });
    await ctx.server.request('DELETE', `/${project}/scratch/${doc.body._id}`, { key });
    const names = (await list('test')).body.collections.map((c: { name: string }) => c.name);
    expect(names).to.deep.equal(['Authors', 'notes']);
  });

  it('needs env=live|test (400), a session (401), the caller’s own project (403, unknown 404)', async () => {
    for (const env of [undefined, '', 'prod']) {
      const res = await list(env);
      expect(res.status, String(env)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_query');
      expect(res.body.error.details.param).to.equal('env');
    }
    const anonymous = await ctx.server.request('GET', `/api/projects/${projectId}/collections?env=test`);
    expect(anonymous.status).to.equal(401);
    const other = await ctx.server.tenant();
    expect((await list('test', other.session)).status).to.equal(403);
    expect((await list('test', ctx.tenant.session, 'prj_00000000000000000000000000')).status).to.equal(404);
  });
});
