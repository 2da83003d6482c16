/** Request ids: cheap (a per-process prefix and a counter), unique, and the caller's own kept when sane. */
import { expect } from 'chai';
import { REQUEST_ID_PATTERN, RequestIdSource } from '../../src/http/requestIds.js';
import { startTestServer } from '../support/server.js';

describe('request ids', () => {
  it('a source counts under its random prefix; two sources never share a prefix by construction of the bytes', () => {
    const a = new RequestIdSource(Buffer.from('0011223344556677', 'hex'));
    expect([a.next(), a.next()]).to.deep.equal(['req_0011223344556677-1', 'req_0011223344556677-2']);
    for (let i = 0; i < 34; i++) a.next();
    expect(a.next()).to.equal('req_0011223344556677-11'); // base 36: the 37th id
    const b = new RequestIdSource();
    const c = new RequestIdSource();
    expect(b.prefix).not.to.equal(c.prefix);
    expect(b.next()).to.match(REQUEST_ID_PATTERN);
  });

  it('every response gets a new id of the pattern, unless the caller sent a sane one', async () => {
    const server = await startTestServer();
    try {
      const ids = new Set<string>();
      for (let i = 0; i < 5; i++)
        ids.add((await server.request('GET', '/healthz')).headers.get('x-request-id') ?? '');
      expect(ids.size).to.equal(5);
      for (const id of ids) expect(id).to.match(REQUEST_ID_PATTERN);
      const kept = await server.request('GET', '/healthz', { headers: { 'X-Request-Id': 'a'.repeat(128) } });
      expect(kept.headers.get('x-request-id')).to.equal('a'.repeat(128));
      for (const insane of ['a'.repeat(129), 'has space', 'semi;colon']) {
        const replaced = await server.request('GET', '/healthz', { headers: { 'X-Request-Id': insane } });
        expect(replaced.headers.get('x-request-id')).to.match(REQUEST_ID_PATTERN);
      }
    } finally {
      await server.close();
    }
  });
});
