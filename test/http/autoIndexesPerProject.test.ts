/**
 * Automatic indexes are on by default (configuration `autoIndexes.enabled`, true in
 * config/default.json) and each project's owner may switch them off or on
 * (`PATCH /api/projects/{id}` `{autoIndexes}`); the thresholds hold at their boundary.
 */
import { expect } from 'chai';
import type { Json } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

/** The default policy's switch, with thresholds small enough for a test (enabled is not set here). */
const THRESHOLDS = { minDocuments: 5, minQueries: 3 };

forEachStore(
  'automatic indexes per project',
  (ctx) => {
    const get = (key: string, path: string) => ctx.server.request('GET', path, { key });
    const settled = () => ctx.server.running.services.autoIndexes.settled();
    const seed = async (key: string, project: string, collection: string, n: number) => {
      for (let i = 0; i < n; i++) {
        const res = await ctx.server.request('POST', `/${project}/${collection}`, {
          key,
          body: { color: `c${i % 2}`, size: i },
        });
        expect(res.status).to.equal(201);
      }
    };
    const names = async (key: string, project: string, collection: string) =>
      ((await get(key, `/${project}/${collection}/_indexes`)).body.data as Json[]).map((i) => i.name);
    const projectIdOf = async (session: string) =>
      (await ctx.server.request('GET', '/api/projects', { session })).body.projects[0].id as string;

    it('are on by default: minQueries (3) queries on exactly minDocuments (5) build one; 2 queries build none', async () => {
      const { key, project } = ctx.tenant;
      await seed(key, project, 'five', 5);
      for (let i = 0; i < 2; i++) await get(key, `/${project}/five?filter[color]=c0`);
      await settled();
      expect(await names(key, project, 'five')).to.deep.equal([]);
      await get(key, `/${project}/five?filter[color]=c0`);
      await settled();
      expect(await names(key, project, 'five')).to.deep.equal(['auto_color_1']);
    });

    it('one document under minDocuments (4): no index however many queries', async () => {
      const { key, project } = ctx.tenant;
      await seed(key, project, 'four', 4);
      for (let i = 0; i < 6; i++) await get(key, `/${project}/four?filter[color]=c0`);
      await settled();
      expect(await names(key, project, 'four')).to.deep.equal([]);
    });

    it('a project switched off builds none; another project still does; switching back on builds again', async () => {
      const off = await ctx.server.tenant({ project: 'quiet' });
      const id = await projectIdOf(off.session);
      const patched = await ctx.server.request('PATCH', `/api/projects/${id}`, {
        session: off.session,
        body: { autoIndexes: false },
      });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ autoIndexes: false });
      expect(patched.body.allowedOrigins).to.equal(null);
      await seed(off.key, 'quiet', 'c', 6);
      for (let i = 0; i < 6; i++) await get(off.key, '/quiet/c?filter[color]=c0');
      await settled();
      expect(await names(off.key, 'quiet', 'c')).to.deep.equal([]);

      const { key, project } = ctx.tenant;
      await seed(key, project, 'other', 6);
      for (let i = 0; i < 3; i++) await get(key, `/${project}/other?sort=size`);
      await settled();
      expect(await names(key, project, 'other')).to.deep.equal(['auto_size_1']);

      const back = await ctx.server.request('PATCH', `/api/projects/${id}`, {
        session: off.session,
        body: { autoIndexes: null },
      });
      expect(back.body).to.include({ autoIndexes: null });
      for (let i = 0; i < 3; i++) await get(off.key, '/quiet/c?filter[color]=c0');
      await settled();
      expect(await names(off.key, 'quiet', 'c')).to.deep.equal(['auto_color_1']);
    });

    it('the setting is the owner’s: another account gets 403, a bad value or an empty body 400, and nothing changes', async () => {
      const id = await projectIdOf(ctx.tenant.session);
      const stranger = await ctx.server.tenant({ project: 'elsewhere' });
      const foreign = await ctx.server.request('PATCH', `/api/projects/${id}`, {
        session: stranger.session,
        body: { autoIndexes: false },
      });
      expect(foreign.status).to.equal(403);
      for (const body of [{ autoIndexes: 'no' }, {}, { autoIndexes: false, extra: 1 }]) {
        const res = await ctx.server.request('PATCH', `/api/projects/${id}`, {
          session: ctx.tenant.session,
          body,
        });
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error.code).to.be.a('string');
      }
      const [project] = (await ctx.server.request('GET', '/api/projects', { session: ctx.tenant.session }))
        .body.projects as Json[];
      expect(project).to.include({ autoIndexes: null });
    });
  },
  { config: { autoIndexes: THRESHOLDS } },
);
