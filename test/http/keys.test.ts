import { expect } from 'chai';
import { startTestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

forEachStore('accounts, sessions and projects', (ctx) => {
  const password = 'correct horse battery';

  it('signup answers 201 with the account and a session token, never the password hash', async () => {
    const res = await ctx.server.request('POST', '/api/auth/signup', {
      body: { email: 'New@Example.test', password },
    });
    expect(res.status).to.equal(201);
    expect(res.body.account).to.include({ email: 'new@example.test', plan: 'free' });
    expect(res.body.account.id).to.match(/^acc_/);
    expect(res.body.token).to.be.a('string');
    expect(res.text).to.not.match(/scrypt|passwordHash/);
    expect(res.headers.get('set-cookie')).to.match(/folio_session=/);
    const again = await ctx.server.request('POST', '/api/auth/signup', {
      body: { email: 'new@example.test', password },
    });
    expect(again.status).to.equal(409);
  });

  it('signup rejects a bad email or a short password with 400 invalid_body', async () => {
    for (const body of [
      { email: 'nope', password },
      { email: 'a@b.test', password: 'short' },
      { email: 'a@b.test' },
    ]) {
      const res = await ctx.server.request('POST', '/api/auth/signup', { body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
  });

  it('login gives a new session; a wrong password is 401; logout ends the session', async () => {
    const email = `login-${Date.now()}@example.test`;
    await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    const wrong = await ctx.server.request('POST', '/api/auth/login', {
      body: { email, password: 'wrong password' },
    });
    expect(wrong.status).to.equal(401);
    const unknown = await ctx.server.request('POST', '/api/auth/login', {
      body: { email: `nobody-${Date.now()}@example.test`, password },
    });
    expect(unknown.status).to.equal(401);
    expect(unknown.body.error.message).to.equal(wrong.body.error.message);
    const login = await ctx.server.request('POST', '/api/auth/login', { body: { email, password } });
    expect(login.status).to.equal(200);
    const session = login.body.token;
    expect((await ctx.server.request('GET', '/api/account', { session })).body.email).to.equal(email);
    expect((await ctx.server.request('POST', '/api/auth/logout', { session })).status).to.equal(204);
    expect((await ctx.server.request('GET', '/api/account', { session })).status).to.equal(401);
  });

  it('the session cookie authenticates too', async () => {
    const email = `cookie-${Date.now()}@example.test`;
    const signup = await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const res = await ctx.server.request('GET', '/api/account', { headers: { Cookie: cookie } });
    expect(res.status).to.equal(200);
    expect(res.body.email).to.equal(email);
  });

  it('PATCH /api/account changes the plan; unknown plans are 400', async () => {
    const { session } = ctx.tenant;
    const res = await ctx.server.request('PATCH', '/api/account', { session, body: { plan: 'team' } });
    expect(res.status).to.equal(200);
    expect(res.body.plan).to.equal('team');
    expect((await ctx.server.request('GET', '/api/account', { session })).body.plan).to.equal('team');
    const bad = await ctx.server.request('PATCH', '/api/account', { session, body: { plan: 'gold' } });
    expect(bad.status).to.equal(400);
    await ctx.server.request('PATCH', '/api/account', { session, body: { plan: 'free' } });
  });

  it('projects: create (201), list, duplicate name 409, invalid or reserved name 400', async () => {
    const { session } = ctx.tenant;
    const created = await ctx.server.request('POST', '/api/projects', { session, body: { name: 'second' } });
    expect(created.status).to.equal(201);
    expect(created.body).to.include({ name: 'second' });
    expect(created.body.id).to.match(/^prj_/);
    const list = await ctx.server.request('GET', '/api/projects', { session });
    expect(list.body.projects.map((p: { name: string }) => p.name)).to.include.members(['app', 'second']);
    expect(
      (await ctx.server.request('POST', '/api/projects', { session, body: { name: 'second' } })).status,
    ).to.equal(409);
    for (const name of ['bad name', '-x', 'api', '']) {
      const res = await ctx.server.request('POST', '/api/projects', { session, body: { name } });
      expect(res.status, name).to.equal(400);
    }
  });

  it('account routes without a session are 401 with WWW-Authenticate', async () => {
    const res = await ctx.server.request('GET', '/api/account');
    expect(res.status).to.equal(401);
    expect(res.body.error.code).to.equal('unauthorized');
    expect(res.headers.get('www-authenticate')).to.equal('Bearer');
  });
});

forEachStore(
  'API keys',
  (ctx, target) => {
    const keysOf = async (session: string, project: string) =>
      (await ctx.server.request('GET', `/api/keys?project=${project}`, { session })).body.keys;

    it('creates a key: 201 {apiKey, rawKey} in the documented format, stored only as a hint', async () => {
      const t = await ctx.server.tenant();
      const res = await ctx.server.request('POST', '/api/keys', {
        session: t.session,
        body: {
          project: t.project,
          name: 'server',
          env: 'live',
          scope: 'read-only',
          config: { team: 'ops' },
        },
      });
      expect(res.status).to.equal(201);
      expect(res.body.rawKey).to.match(/^folio_sk_live_[0-9A-Za-z]{40}$/);
      expect(res.body.apiKey).to.include({
        name: 'server',
        project: t.project,
        env: 'live',
        scope: 'read-only',
        status: 'active',
      });
      expect(res.body.apiKey.config).to.deep.equal({ team: 'ops' });
      expect(res.body.apiKey.hint).to.equal(`folio_sk_live_...${res.body.rawKey.slice(-4)}`);
      expect(res.body.apiKey.id).to.match(/^key_[0-9A-Z]{26}$/);
      expect(Object.keys(res.body.apiKey).sort()).to.deep.equal(
        [
          'config',
          'createdAt',
          'env',
          'hint',
          'id',
          'lastUsedAt',
          'name',
          'project',
          'rules',
          'scope',
          'status',
        ].sort(),
      );
      const listed = await keysOf(t.session, t.project);
      expect(JSON.stringify(listed)).to.not.include(res.body.rawKey.slice(14));
      expect(listed.map((k: { id: string }) => k.id)).to.include(res.body.apiKey.id);
    });

    it('records when a key was last used', async () => {
      const t = await ctx.server.tenant();
      expect((await keysOf(t.session, t.project))[0].lastUsedAt).to.equal(null);
      const before = Date.now();
      await ctx.server.request('GET', `/${t.project}/c`, { key: t.key });
      // The stamp is written in the background: wait for it briefly.
      let lastUsedAt: string | null = null;
      for (let i = 0; i < 50 && !lastUsedAt; i++) {
        lastUsedAt = (await keysOf(t.session, t.project))[0].lastUsedAt;
        if (!lastUsedAt) await new Promise((r) => setTimeout(r, 20));
      }
      expect(Date.parse(lastUsedAt as string)).to.be.at.least(before - 1000);
    });

    it('enforces active keys per plan (Free 2); revoking frees a slot', async () => {
      const t = await ctx.server.tenant();
      const second = await t.newKey({ env: 'live' });
      const third = await ctx.server.request('POST', '/api/keys', {
        session: t.session,
        body: { project: t.project, name: 'third', env: 'test' },
      });
      expect(third.status).to.equal(403);
      expect(third.body.error.code).to.equal('plan_limit_exceeded');
      expect(third.body.error.details).to.deep.equal({
        limit: 'active API keys per project',
        max: 2,
        plan: 'free',
      });
      expect(
        (await ctx.server.request('DELETE', `/api/keys/${second.id}`, { session: t.session })).status,
      ).to.equal(204);
      expect((await t.newKey()).rawKey).to.match(/^folio_sk_test_/);
    });

    it('a revoked key gets 401 on its next request', async () => {
      const t = await ctx.server.tenant();
      const { id } = (await keysOf(t.session, t.project))[0];
      expect((await ctx.server.request('GET', `/${t.project}/c/x`, { key: t.key })).status).to.equal(404);
      await ctx.server.request('DELETE', `/api/keys/${id}`, { session: t.session });
      const res = await ctx.server.request('GET', `/${t.project}/c/x`, { key: t.key });
      expect(res.status).to.equal(401);
      expect(res.headers.get('www-authenticate')).to.equal('Bearer');
    });

    it('a plan change applies to the very next request of a key this instance just authenticated', async () => {
      const t = await ctx.server.tenant({ plan: 'free' });
      // Free pages hold at most 50 documents, Pro pages 100.
      const page = () => ctx.server.request('GET', `/${t.project}/c?limit=100`, { key: t.key });
      expect((await page()).status).to.equal(403);
      await ctx.server.request('PATCH', '/api/account', { session: t.session, body: { plan: 'pro' } });
      expect((await page()).status).to.equal(200);
    });

    // Only MongoDB is shared by several instances; the embedded store is one process by design.
    if (target.name !== 'embedded') {
      it('another instance refuses a revoked key within auth.keyCacheMs', async () => {
        const cacheMs = 300;
        const { config } = ctx.server.running.services;
        const other = await startTestServer({
          config: {
            store: config.store,
            mongodbUri: config.mongodbUri,
            mongodb: config.mongodb,
            auth: { keyCacheMs: cacheMs },
          },
        });
        try {
          const t = await ctx.server.tenant();
          const { id } = (await keysOf(t.session, t.project))[0];
          expect((await other.request('GET', `/${t.project}/c`, { key: t.key })).status).to.equal(200);
          await ctx.server.request('DELETE', `/api/keys/${id}`, { session: t.session });
          expect((await ctx.server.request('GET', `/${t.project}/c`, { key: t.key })).status).to.equal(401);
          await new Promise((resolve) => setTimeout(resolve, cacheMs));
          expect((await other.request('GET', `/${t.project}/c`, { key: t.key })).status).to.equal(401);
        } finally {
          await other.close();
        }
      });
    }

    it('rotate answers 201 {apiKey, rawKey}, keeps name, config, scope and env, and kills the old secret at once', async () => {
      const t = await ctx.server.tenant();
      const created = await ctx.server.request('POST', '/api/keys', {
        session: t.session,
        body: { project: t.project, name: 'rotating', env: 'live', scope: 'read-only', config: { a: 1 } },
      });
      const oldKey = created.body.rawKey;
      expect((await ctx.server.request('GET', `/${t.project}/c`, { key: oldKey })).status).to.equal(200);
      const res = await ctx.server.request('POST', `/api/keys/${created.body.apiKey.id}/rotate`, {
        session: t.session,
      });
      expect(res.status).to.equal(201);
      expect(res.body.rawKey)
        .to.match(/^folio_sk_live_/)
        .and.not.equal(oldKey);
      expect(res.body.apiKey).to.include({
        name: 'rotating',
        env: 'live',
        scope: 'read-only',
        status: 'active',
      });
      expect(res.body.apiKey.config).to.deep.equal({ a: 1 });
      expect(res.body.apiKey.rotatedFrom).to.equal(created.body.apiKey.id);
      expect((await ctx.server.request('GET', `/${t.project}/c`, { key: oldKey })).status).to.equal(401);
      expect((await ctx.server.request('GET', `/${t.project}/c`, { key: res.body.rawKey })).status).to.equal(
        200,
      );
      const statuses = Object.fromEntries(
        (await keysOf(t.session, t.project)).map((k: { id: string; status: string }) => [k.id, k.status]),
      );
      expect(statuses[created.body.apiKey.id]).to.equal('revoked');
      // A revoked key cannot be rotated again.
      const again = await ctx.server.request('POST', `/api/keys/${created.body.apiKey.id}/rotate`, {
        session: t.session,
      });
      expect(again.status).to.equal(404);
    });

    it('rotation needs a session: an API key is not accepted', async () => {
      const t = await ctx.server.tenant();
      const { id } = (await keysOf(t.session, t.project))[0];
      expect((await ctx.server.request('POST', `/api/keys/${id}/rotate`, { key: t.key })).status).to.equal(
        401,
      );
    });

    it("another account's key id is 404 for list, revoke and rotate", async () => {
      const a = await ctx.server.tenant();
      const b = await ctx.server.tenant();
      const { id } = (await keysOf(a.session, a.project))[0];
      expect((await ctx.server.request('DELETE', `/api/keys/${id}`, { session: b.session })).status).to.equal(
        404,
      );
      expect(
        (await ctx.server.request('POST', `/api/keys/${id}/rotate`, { session: b.session })).status,
      ).to.equal(404);
      expect(
        (await ctx.server.request('GET', `/api/keys?project=${a.project}-none`, { session: b.session }))
          .status,
      ).to.equal(404);
    });
  },
  // A cache entry outlives every test here: revocation, rotation and plan changes must evict it.
  { config: { auth: { keyCacheMs: 60_000 } } },
);

forEachStore('API-key access rules', (ctx) => {
  it('missing, malformed and unknown keys are 401 unauthorized', async () => {
    const p = `/${ctx.tenant.project}/things`;
    for (const key of [undefined, 'garbage', `folio_sk_test_${'x'.repeat(40)}`]) {
      const res = await ctx.server.request('GET', p, key ? { key } : {});
      expect(res.status, String(key)).to.equal(401);
      expect(res.body.error.code).to.equal('unauthorized');
    }
  });

  it('read-only keys may GET but every write is 403 read_only_key and changes nothing', async () => {
    const t = ctx.tenant;
    const { rawKey: ro } = await t.newKey({ scope: 'read-only' });
    const doc = (await ctx.server.request('POST', `/${t.project}/ro`, { key: t.key, body: { a: 1 } })).body;
    expect((await ctx.server.request('GET', `/${t.project}/ro/${doc._id}`, { key: ro })).status).to.equal(
      200,
    );
    const writes = [
      ctx.server.request('POST', `/${t.project}/ro`, { key: ro, body: { a: 2 } }),
      ctx.server.request('PUT', `/${t.project}/ro/${doc._id}`, { key: ro, body: { a: 2 } }),
      ctx.server.request('PATCH', `/${t.project}/ro/${doc._id}`, {
        key: ro,
        body: { a: 2 },
        contentType: 'application/merge-patch+json',
      }),
      ctx.server.request('DELETE', `/${t.project}/ro/${doc._id}`, { key: ro }),
      ctx.server.request('POST', `/${t.project}/ro/${doc._id}/versions/1/restore`, { key: ro }),
    ];
    for (const res of await Promise.all(writes)) {
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('read_only_key');
    }
    expect((await ctx.server.request('GET', `/${t.project}/ro/${doc._id}`, { key: t.key })).body).to.include({
      a: 1,
      $version: 1,
    });
  });

  it("a key works only on its own project: another project's path is 403 forbidden", async () => {
    const other = await ctx.server.tenant({ project: 'elsewhere' });
    const res = await ctx.server.request('GET', `/${other.project}/things`, { key: ctx.tenant.key });
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('forbidden');
    // Still a keyed response: it counts against the key and says so.
    expect(res.headers.get('x-ratelimit-remaining')).to.match(/^\d+$/);
  });

  it('test and live keys of one project see disjoint collections of the same name', async () => {
    const t = await ctx.server.tenant();
    const { rawKey: live } = await t.newKey({ env: 'live' });
    const testDoc = (
      await ctx.server.request('PUT', `/${t.project}/shared/same-id`, { key: t.key, body: { env: 'test' } })
    ).body;
    expect(testDoc.$version).to.equal(1);
    expect((await ctx.server.request('GET', `/${t.project}/shared/same-id`, { key: live })).status).to.equal(
      404,
    );
    const liveDoc = await ctx.server.request('PUT', `/${t.project}/shared/same-id`, {
      key: live,
      body: { env: 'live' },
    });
    expect(liveDoc.status).to.equal(201);
    expect(
      (await ctx.server.request('GET', `/${t.project}/shared/same-id`, { key: t.key })).body.env,
    ).to.equal('test');
    const liveList = await ctx.server.request('GET', `/${t.project}/shared`, { key: live });
    expect(liveList.body.data.map((d: { env: string }) => d.env)).to.deep.equal(['live']);
  });

  it('two accounts with a project of the same name never see each other', async () => {
    const a = await ctx.server.tenant({ project: 'twin' });
    const b = await ctx.server.tenant({ project: 'twin' });
    await ctx.server.request('PUT', '/twin/c/one', { key: a.key, body: { owner: 'a' } });
    expect((await ctx.server.request('GET', '/twin/c/one', { key: b.key })).status).to.equal(404);
  });
});
