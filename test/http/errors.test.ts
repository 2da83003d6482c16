import { expect } from 'chai';
import { forEachStore } from '../support/stores.js';

forEachStore('errors and input validation', (ctx) => {
  const p = (s: string) => `/${ctx.tenant.project}${s}`;
  const req = (method: string, s: string, options: Parameters<typeof ctx.server.request>[2] = {}) =>
    ctx.server.request(method, p(s), { key: ctx.tenant.key, ...options });

  async function expectNothingWritten(collection: string): Promise<void> {
    const list = await req('GET', `/${collection}`);
    expect(list.body.meta.total, `${collection} must stay empty`).to.equal(0);
  }

  it('every response carries X-Request-Id, and a sane incoming one is echoed', async () => {
    const plain = await ctx.server.request('GET', '/healthz');
    expect(plain.status).to.equal(200);
    expect(plain.headers.get('x-request-id')).to.match(/^req_/);
    const echoed = await ctx.server.request('GET', '/nope', { headers: { 'X-Request-Id': 'trace-123' } });
    expect(echoed.headers.get('x-request-id')).to.equal('trace-123');
    const err = await req('GET', '/c/missing');
    expect(err.headers.get('x-request-id')).to.match(/^req_/);
  });

  it('errors have the JSON shape {error:{code,message}}', async () => {
    const res = await req('GET', '/c/missing');
    expect(res.headers.get('content-type')).to.match(/application\/json/);
    expect(res.body.error).to.have.keys('code', 'message');
    expect(res.body.error.message).to.be.a('string').and.not.empty;
  });

  it('malformed JSON is 400 invalid_body and writes nothing', async () => {
    const res = await req('POST', '/bad1', { rawBody: '{"a":' });
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('invalid_body');
    await expectNothingWritten('bad1');
  });

  it('a body that does not match its Content-Encoding is 400, an unknown encoding 415', async () => {
    const gzip = await req('POST', '/bad6', { rawBody: 'not gzip', headers: { 'Content-Encoding': 'gzip' } });
    expect(gzip.status).to.equal(400);
    expect(gzip.body.error.code).to.equal('invalid_body');
    const unknown = await req('POST', '/bad6', { rawBody: '{}', headers: { 'Content-Encoding': 'zz' } });
    expect(unknown.status).to.equal(415);
    await expectNothingWritten('bad6');
  });

  it('non-object bodies are 400 invalid_body', async () => {
    for (const rawBody of ['[1,2]', '"text"', '42', 'null', '']) {
      const res = await req('POST', '/bad2', { rawBody });
      expect(res.status, rawBody).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
    const put = await req('PUT', '/bad2/x', { rawBody: '[1]' });
    expect(put.status).to.equal(400);
    await expectNothingWritten('bad2');
  });

  it('$-prefixed, dotted and reserved field names are 400 at any depth', async () => {
    const bodies = [
      { $set: 1 },
      { a: { $gt: 1 } },
      { 'a.b': 1 },
      { a: [{ 'x.y': 1 }] },
      { _folio: {} },
      { '': 1 },
    ];
    for (const body of bodies) {
      const res = await req('POST', '/bad3', { body });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
    await expectNothingWritten('bad3');
  });

  it('__proto__ keys are refused with 400 and a message that says so', async () => {
    for (const rawBody of ['{"__proto__":{"x":1},"a":1}', '{"a":{"__proto__":{"y":2}}}']) {
      const res = await req('POST', '/bad5', { rawBody });
      expect(res.status, rawBody).to.equal(400);
      expect(res.body.error.message).to.include('__proto__');
    }
    await expectNothingWritten('bad5');
  });

  it('documents nested deeper than 64 levels are 400: 64 levels are stored, 65 are not', async () => {
    /** `{"leaf":1}` is one level; each `{"d": …}` around it adds one. */
    const levels = (n: number) => {
      let doc: Record<string, unknown> = { leaf: 1 };
      for (let i = 1; i < n; i++) doc = { d: doc };
      return doc;
    };
    for (const n of [65, 70]) {
      const res = await req('POST', '/bad7', { body: levels(n) });
      expect(res.status, `${n} levels`).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
    expect((await req('GET', '/bad7')).body.meta.total).to.equal(0);
    expect((await req('POST', '/bad8', { body: levels(64) })).status).to.equal(201);
  });

  it('a merge patch cannot smuggle in bad field names', async () => {
    const doc = (await req('POST', '/bad4', { body: { a: 1 } })).body;
    const res = await req('PATCH', `/bad4/${doc._id}`, {
      body: { b: { $where: 'x' } },
      contentType: 'application/merge-patch+json',
    });
    expect(res.status).to.equal(400);
    expect((await req('GET', `/bad4/${doc._id}`)).body.$version).to.equal(1);
  });

  it('bad collection names and bad document ids are 400', async () => {
    for (const name of ['has.dot', '-dash', 'a'.repeat(65), 'sp%20ace']) {
      const res = await req('POST', `/${name}`, { body: { a: 1 } });
      expect(res.status, name).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_body');
    }
    const badId = await req('PUT', '/c/bad%20id', { body: { a: 1 } });
    expect(badId.status).to.equal(400);
  });

  it('bodies over the 1 MiB document limit are 413 payload_too_large', async () => {
    const big = { blob: 'x'.repeat(1024 * 1024 + 10) };
    const res = await req('POST', '/big', { body: big });
    expect(res.status).to.equal(413);
    expect(res.body.error.code).to.equal('payload_too_large');
    await expectNothingWritten('big');
  });

  it('a patch that grows a document past 1 MiB is 413 and writes nothing', async () => {
    const doc = (await req('POST', '/big2', { body: { a: 'y'.repeat(600 * 1024) } })).body;
    const res = await req('PATCH', `/big2/${doc._id}`, {
      body: { b: 'z'.repeat(600 * 1024) },
      contentType: 'application/merge-patch+json',
    });
    expect(res.status).to.equal(413);
    expect((await req('GET', `/big2/${doc._id}`)).body.$version).to.equal(1);
  });

  it('a wrong Content-Type is 415 naming the accepted types', async () => {
    const post = await req('POST', '/c', {
      rawBody: 'a=1',
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(post.status).to.equal(415);
    expect(post.body.error.code).to.equal('unsupported_media_type');
    expect(post.body.error.message).to.include('application/json');
    const doc = (await req('POST', '/c', { body: { a: 1 } })).body;
    const patch = await req('PATCH', `/c/${doc._id}`, { body: { a: 2 } });
    expect(patch.status).to.equal(415);
    expect(patch.body.error.message).to.include('application/merge-patch+json');
    expect(patch.body.error.message).to.include('application/json-patch+json');
  });

  it('unknown routes are a JSON 404; wrong methods a JSON 405', async () => {
    const unknown = await ctx.server.request('GET', '/api/nothing-here');
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error.code).to.equal('not_found');
    const deep = await req('GET', '/c/id/versions/1/extra/segments');
    expect(deep.status).to.equal(404);
    expect(deep.body.error.code).to.equal('not_found');
    const method = await req('DELETE', '/c');
    expect(method.status).to.equal(405);
    expect(method.body.error.code).to.equal('method_not_allowed');
  });
});
