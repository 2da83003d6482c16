import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';

describe('secrets stay secret', () => {
  const lines: string[] = [];
  let server: TestServer;
  const password = 'correct horse battery';

  before(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    server = await startTestServer({ logStream: sink });
  });
  after(() => server.close());

  async function exercise(): Promise<{ rawKey: string; session: string; rotated: string }> {
    const email = `secret-${Date.now()}@example.test`;
    const signup = await server.request('POST', '/api/auth/signup', { body: { email, password } });
    const session = signup.body.token as string;
    await server.request('POST', '/api/projects', { session, body: { name: 'vault' } });
    const created = await server.request('POST', '/api/keys', {
      session,
      body: { project: 'vault', name: 'k', env: 'live' },
    });
    const rawKey = created.body.rawKey as string;
    await server.request('POST', '/vault/things', { key: rawKey, body: { a: 1 } });
    await server.request('GET', '/vault/things', { key: rawKey });
    const rotated = await server.request('POST', `/api/keys/${created.body.apiKey.id}/rotate`, { session });
    await server.request('POST', '/api/auth/login', { body: { email, password } });
    return { rawKey, session, rotated: rotated.body.rawKey as string };
  }

  it('raw keys, session tokens and passwords never reach the database files', async () => {
    const { rawKey, session, rotated } = await exercise();
    const dir = server.running.services.config.dataDir;
    const files = (await readdir(dir)).filter((f) => f.startsWith('folio.db'));
    expect(files).to.include('folio.db');
    const bytes = Buffer.concat(await Promise.all(files.map((f) => readFile(join(dir, f)))));
    for (const secret of [rawKey, rawKey.slice(-40), session, rotated, password]) {
      expect(bytes.includes(Buffer.from(secret)), `found ${secret.slice(0, 12)}...`).to.equal(false);
    }
    // The hint is there (proves we looked at the right files).
    expect(bytes.includes(Buffer.from(`folio_sk_live_...${rawKey.slice(-4)}`))).to.equal(true);
  });

  it('request logs carry one line per request and never a key, token or password', async () => {
    lines.length = 0;
    const { rawKey, session, rotated } = await exercise();
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    expect(requests.length).to.equal(7);
    for (const line of requests) expect(line).to.include.keys('requestId', 'method', 'path', 'status', 'ms');
    const all = lines.join('\n');
    for (const secret of [rawKey, session, rotated, password]) expect(all).to.not.include(secret);
  });
});

describe('closed signup', () => {
  it('refuses POST /api/auth/signup with 403 signup_closed when auth.signup is closed', async () => {
    const server = await startTestServer({ config: { auth: { signup: 'closed' } } });
    try {
      const res = await server.request('POST', '/api/auth/signup', {
        body: { email: 'x@example.test', password: 'correct horse battery' },
      });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('signup_closed');
    } finally {
      await server.close();
    }
  });
});
