/**
 * The session cookie and CSRF: a state-changing `/api` request authenticated by the cookie needs
 * the session's X-CSRF-Token and no foreign Origin; Bearer sessions and reads need neither.
 */
import { expect } from 'chai';
import { hashToken } from '../../src/services/secrets.js';
import { type ApiResponse, startTestServer, type TestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

forEachStore('session cookie and CSRF protection', (ctx) => {
  const password = 'correct horse battery';
  let cookie = '';
  let csrfToken = '';
  let session = '';
  let keyId = '';

  const cookieOf = (res: ApiResponse) => (res.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const rotate = (headers: Record<string, string>, extra: { rawBody?: string; contentType?: string } = {}) =>
    ctx.server.request('POST', `/api/keys/${keyId}/rotate`, { headers, ...extra });
  const keyCount = async () =>
    (await ctx.server.request('GET', `/api/keys?project=app`, { session })).body.keys.length as number;

  before(async () => {
    const email = `csrf-${Date.now()}@example.test`;
    const signup = await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    cookie = cookieOf(signup);
    session = signup.body.token;
    csrfToken = signup.body.csrfToken;
    await ctx.server.request('POST', '/api/projects', { session, body: { name: 'app' } });
    const key = await ctx.server.request('POST', '/api/keys', {
      session,
      body: { project: 'app', name: 'k', env: 'test' },
    });
    keyId = key.body.apiKey.id;
  });

  it('the session cookie is HttpOnly and SameSite=Lax; a client’s own X-Forwarded-Proto does not make it Secure', async () => {
    const email = `cookie-${Date.now()}@example.test`;
    const plain = await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    const header = plain.headers.get('set-cookie') ?? '';
    expect(header).to.match(/folio_session=folio_sess_/);
    expect(header).to.match(/;\s*httponly/i);
    expect(header).to.match(/;\s*samesite=lax/i);
    expect(header).to.not.match(/;\s*secure/i);
    // No proxy is declared in front (FOLIO_HTTP_TRUST_PROXY off): forwarded headers are the client's.
    const forged = await ctx.server.request('POST', '/api/auth/login', {
      body: { email, password },
      headers: { 'X-Forwarded-Proto': 'https' },
    });
    expect(forged.headers.get('set-cookie') ?? '').to.not.match(/;\s*secure/i);
  });

  it('a forged X-Forwarded-Host does not make a foreign Origin look like Folio’s own', async () => {
    const before = await keyCount();
    const res = await rotate({
      Cookie: cookie,
      'X-CSRF-Token': csrfToken,
      Origin: 'http://evil.example',
      'X-Forwarded-Host': 'evil.example',
    });
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('csrf_failed');
    expect(await keyCount()).to.equal(before);
  });

  it('a session lives FOLIO_AUTH_SESSION_TTL_HOURS (720 by default): in the store and in the cookie', async () => {
    const email = `ttl-${Date.now()}@example.test`;
    const res = await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    const stored = await ctx.server.running.services.store.accounts.findSession(
      hashToken(res.body.token),
      new Date().toISOString(),
    );
    expect(stored).to.not.equal(null);
    const lifetimeMs = Date.parse(stored?.expiresAt ?? '') - Date.parse(stored?.createdAt ?? '');
    expect(lifetimeMs).to.equal(720 * 3_600_000);
    // The cookie's expiry is the same lifetime from the answer's own clock (whole seconds).
    const header = res.headers.get('set-cookie') ?? '';
    const cookieExpires = Date.parse(/expires=([^;]+)/i.exec(header)?.[1] ?? '');
    expect(cookieExpires - Date.parse(stored?.createdAt ?? '')).to.be.within(
      720 * 3_600_000 - 2000,
      720 * 3_600_000 + 1000,
    );
  });

  it('GET /api/auth/session gives the account and the CSRF token signup gave, never the session token', async () => {
    const res = await ctx.server.request('GET', '/api/auth/session', { headers: { Cookie: cookie } });
    expect(res.status).to.equal(200);
    expect(res.body.csrfToken).to.equal(csrfToken);
    expect(res.body.account.email).to.match(/^csrf-/);
    expect(res.text).to.not.include(session);
    const anonymous = await ctx.server.request('GET', '/api/auth/session');
    expect(anonymous.status).to.equal(401);
  });

  it('a cross-site form post with the cookie is 403 csrf_failed and rotates nothing', async () => {
    const before = await keyCount();
    const res = await rotate(
      { Cookie: cookie, Origin: 'https://evil.example' },
      { rawBody: 'x=1', contentType: 'application/x-www-form-urlencoded' },
    );
    expect(res.status).to.equal(403);
    expect(res.body.error.code).to.equal('csrf_failed');
    expect(res.body.error.message).to.include('https://evil.example');
    expect(await keyCount()).to.equal(before);
  });

  it('the cookie without X-CSRF-Token, with a wrong one, or with another session’s is refused', async () => {
    const other = await ctx.server.request('POST', '/api/auth/signup', {
      body: { email: `other-${Date.now()}@example.test`, password },
    });
    const before = await keyCount();
    // The real token with its last character changed (to something it is not).
    const nearMiss = `${csrfToken.slice(0, -1)}${csrfToken.endsWith('A') ? 'B' : 'A'}`;
    for (const token of [undefined, '', 'x', nearMiss, other.body.csrfToken]) {
      const headers: Record<string, string> = { Cookie: cookie };
      if (token !== undefined) headers['X-CSRF-Token'] = token;
      const res = await rotate(headers);
      expect(res.status, String(token)).to.equal(403);
      expect(res.body.error.code).to.equal('csrf_failed');
      expect(res.body.error.message).to.include('X-CSRF-Token');
    }
    expect(await keyCount()).to.equal(before);
  });

  it('the right token with a foreign Origin is still refused; with Folio’s own Origin it passes', async () => {
    const foreign = await rotate({ Cookie: cookie, 'X-CSRF-Token': csrfToken, Origin: 'http://127.0.0.2:1' });
    expect(foreign.status).to.equal(403);
    const own = await rotate({ Cookie: cookie, 'X-CSRF-Token': csrfToken, Origin: ctx.server.url });
    expect(own.status).to.equal(201);
    keyId = own.body.apiKey.id;
  });

  it('the cookie with the token changes state (logout included); without Origin too', async () => {
    const res = await rotate({ Cookie: cookie, 'X-CSRF-Token': csrfToken });
    expect(res.status).to.equal(201);
    keyId = res.body.apiKey.id;
    const plan = await ctx.server.request('PATCH', '/api/account', {
      body: { plan: 'pro' },
      headers: { Cookie: cookie, 'X-CSRF-Token': csrfToken },
    });
    expect(plan.status).to.equal(200);
  });

  it('reads with the cookie need no token; a Bearer session needs none for writes', async () => {
    expect(
      (await ctx.server.request('GET', '/api/projects', { headers: { Cookie: cookie } })).status,
    ).to.equal(200);
    const bearer = await ctx.server.request('POST', `/api/keys/${keyId}/rotate`, { session });
    expect(bearer.status).to.equal(201);
    keyId = bearer.body.apiKey.id;
  });

  it('logout with the cookie needs the token, and ends the session', async () => {
    const email = `logout-${Date.now()}@example.test`;
    const signup = await ctx.server.request('POST', '/api/auth/signup', { body: { email, password } });
    const own = cookieOf(signup);
    const refused = await ctx.server.request('POST', '/api/auth/logout', { headers: { Cookie: own } });
    expect(refused.status).to.equal(403);
    expect((await ctx.server.request('GET', '/api/account', { headers: { Cookie: own } })).status).to.equal(
      200,
    );
    const done = await ctx.server.request('POST', '/api/auth/logout', {
      headers: { Cookie: own, 'X-CSRF-Token': signup.body.csrfToken },
    });
    expect(done.status).to.equal(204);
    expect(done.headers.get('set-cookie') ?? '').to.match(/folio_session=;/);
    expect((await ctx.server.request('GET', '/api/account', { headers: { Cookie: own } })).status).to.equal(
      401,
    );
  });
});

describe('session cookie and CSRF behind a proxy (FOLIO_HTTP_TRUST_PROXY=true)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ config: { http: { trustProxy: true } } });
  });
  after(async () => {
    await server.close();
  });

  it('the proxy’s X-Forwarded-Proto makes the cookie Secure, and its X-Forwarded-Host is Folio’s origin', async () => {
    const email = `proxy-${Date.now()}@example.test`;
    const password = 'correct horse battery';
    const signup = await server.request('POST', '/api/auth/signup', {
      body: { email, password },
      headers: { 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'folio.example' },
    });
    expect(signup.headers.get('set-cookie') ?? '').to.match(/;\s*secure/i);
    const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] as string;
    const headers = { Cookie: cookie, 'X-CSRF-Token': signup.body.csrfToken };
    const proxied = { ...headers, 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'folio.example' };
    const own = await server.request('PATCH', '/api/account', {
      body: { plan: 'pro' },
      headers: { ...proxied, Origin: 'https://folio.example' },
    });
    expect(own.status).to.equal(200);
    const foreign = await server.request('PATCH', '/api/account', {
      body: { plan: 'team' },
      headers: { ...proxied, Origin: 'https://evil.example' },
    });
    expect(foreign.status).to.equal(403);
    expect(foreign.body.error.code).to.equal('csrf_failed');
  });
});
