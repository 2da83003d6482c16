import { expect } from 'chai';
import { forEachStore } from '../support/stores.js';

forEachStore('documents over HTTP', (ctx) => {
  const path = (p: string) => `/${ctx.tenant.project}${p}`;
  const req = (method: string, p: string, options: Parameters<typeof ctx.server.request>[2] = {}) =>
    ctx.server.request(method, path(p), { key: ctx.tenant.key, ...options });

  it('POST creates a document with a generated doc_ id and server metadata (201)', async () => {
    const res = await req('POST', '/notes', { body: { title: 'hello', tags: ['a'] } });
    expect(res.status).to.equal(201);
    expect(res.body._id).to.match(/^doc_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(res.body).to.include({ title: 'hello', $version: 1 });
    expect(res.body.$createdAt).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.body.$updatedAt).to.equal(res.body.$createdAt);
    expect(res.headers.get('etag')).to.equal('"1"');
    expect(res.headers.get('location')).to.equal(path(`/notes/${res.body._id}`));
  });

  it('generated ids sort in creation order', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await req('POST', '/ordered', { body: { i } })).body._id);
    expect([...ids].sort()).to.deep.equal(ids);
  });

  it('GET returns the document with its ETag; unknown ids are 404 not_found', async () => {
    const created = (await req('POST', '/notes', { body: { n: 1 } })).body;
    const res = await req('GET', `/notes/${created._id}`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal(created);
    expect(res.headers.get('etag')).to.equal('"1"');
    const missing = await req('GET', '/notes/doc_missing');
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
  });

  it('the server owns $createdAt, $updatedAt and $version: client values are ignored', async () => {
    const res = await req('POST', '/notes', {
      body: { n: 1, $version: 99, $createdAt: '1999-01-01T00:00:00.000Z', $updatedAt: 'x' },
    });
    expect(res.body.$version).to.equal(1);
    expect(res.body.$createdAt).to.not.equal('1999-01-01T00:00:00.000Z');
    const put = await req('PUT', `/notes/${res.body._id}`, { body: { ...res.body, n: 2, $version: 50 } });
    expect(put.body.$version).to.equal(2);
    expect(put.body.$createdAt).to.equal(res.body.$createdAt);
  });

  it('POST honours a client _id and answers 409 conflict when it is taken', async () => {
    const first = await req('POST', '/named', { body: { _id: 'alpha', v: 1 } });
    expect(first.status).to.equal(201);
    expect(first.body._id).to.equal('alpha');
    const again = await req('POST', '/named', { body: { _id: 'alpha', v: 2 } });
    expect(again.status).to.equal(409);
    expect(again.body.error.code).to.equal('conflict');
    expect((await req('GET', '/named/alpha')).body.v).to.equal(1);
  });

  it('PUT replaces the whole body (200) and creates a missing document (201)', async () => {
    const created = await req('PUT', '/things/t1', { body: { a: 1, b: 2 } });
    expect(created.status).to.equal(201);
    expect(created.body).to.include({ _id: 't1', a: 1, b: 2, $version: 1 });
    const replaced = await req('PUT', '/things/t1', { body: { c: 3 } });
    expect(replaced.status).to.equal(200);
    expect(replaced.body).to.include({ _id: 't1', c: 3, $version: 2 });
    expect(replaced.body).to.not.have.property('a');
    expect(replaced.headers.get('etag')).to.equal('"2"');
  });

  it('PUT with a body _id that differs from the path is 400 and changes nothing', async () => {
    await req('PUT', '/things/t2', { body: { a: 1 } });
    const res = await req('PUT', '/things/t2', { body: { _id: 'other', a: 2 } });
    expect(res.status).to.equal(400);
    expect(res.body.error.code).to.equal('invalid_body');
    expect((await req('GET', '/things/t2')).body).to.include({ a: 1, $version: 1 });
  });

  it('PATCH with merge-patch+json changes only the sent fields and null removes (RFC 7396)', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1, b: { c: 2, d: 3 }, e: 'x' } })).body;
    const res = await req('PATCH', `/notes/${doc._id}`, {
      body: { b: { c: 20, d: null }, e: null, f: [1] },
      contentType: 'application/merge-patch+json',
    });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ a: 1, $version: 2 });
    expect(res.body.b).to.deep.equal({ c: 20 });
    expect(res.body.f).to.deep.equal([1]);
    expect(res.body).to.not.have.property('e');
    expect(res.body.$createdAt).to.equal(doc.$createdAt);
  });

  it('a write stores the text it answers: PATCH, PUT and POST answers are what GET and the version read back, byte for byte', async () => {
    const created = await req('POST', '/echo', { body: { a: 1, ünï: 'ç', nested: { x: [1, { y: null }] } } });
    const id = created.body._id;
    const patched = await req('PATCH', `/echo/${id}`, {
      body: { a: 2, z: 'new' },
      contentType: 'application/merge-patch+json',
    });
    const put = await req('PUT', `/echo/${id}`, { body: { b: 'replaced', emoji: '😀' } });
    for (const [answer, version] of [
      [created, 1],
      [patched, 2],
      [put, 3],
    ] as const) {
      expect((await req('GET', `/echo/${id}/versions/${version}`)).text).to.equal(answer.text);
    }
    expect((await req('GET', `/echo/${id}`)).text).to.equal(put.text);
  });

  it('PATCH with json-patch+json applies RFC 6902 operations', async () => {
    const doc = (await req('POST', '/notes', { body: { list: [1, 2], name: 'n' } })).body;
    const res = await req('PATCH', `/notes/${doc._id}`, {
      body: [
        { op: 'add', path: '/list/-', value: 3 },
        { op: 'replace', path: '/name', value: 'm' },
        { op: 'test', path: '/$version', value: 1 },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(res.status).to.equal(200);
    expect(res.body).to.include({ name: 'm', $version: 2 });
    expect(res.body.list).to.deep.equal([1, 2, 3]);
  });

  it('a JSON patch that cannot apply is 409 patch_failed and writes nothing', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    const failedTest = await req('PATCH', `/notes/${doc._id}`, {
      body: [
        { op: 'replace', path: '/a', value: 2 },
        { op: 'test', path: '/a', value: 999 },
      ],
      contentType: 'application/json-patch+json',
    });
    expect(failedTest.status).to.equal(409);
    expect(failedTest.body.error.code).to.equal('patch_failed');
    const missingPath = await req('PATCH', `/notes/${doc._id}`, {
      body: [{ op: 'remove', path: '/nope' }],
      contentType: 'application/json-patch+json',
    });
    expect(missingPath.status).to.equal(409);
    expect((await req('GET', `/notes/${doc._id}`)).body).to.include({ a: 1, $version: 1 });
  });

  it('a malformed JSON patch is 400 invalid_patch', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    for (const body of [{ op: 'add' }, [{ op: 'jump', path: '/a' }], [{ op: 'add', path: '/b' }]]) {
      const res = await req('PATCH', `/notes/${doc._id}`, {
        body,
        contentType: 'application/json-patch+json',
      });
      expect(res.status, JSON.stringify(body)).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_patch');
    }
  });

  it('a JSON patch may replace the whole content at the root; the server keeps _id and metadata', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    const res = await req('PATCH', `/notes/${doc._id}`, {
      body: [{ op: 'replace', path: '', value: { b: 2 } }],
      contentType: 'application/json-patch+json',
    });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({
      _id: doc._id,
      b: 2,
      $createdAt: doc.$createdAt,
      $updatedAt: res.body.$updatedAt,
      $version: 2,
    });
    const toArray = await req('PATCH', `/notes/${doc._id}`, {
      body: [{ op: 'replace', path: '', value: [1] }],
      contentType: 'application/json-patch+json',
    });
    expect(toArray.status).to.equal(400);
    expect(toArray.body.error.code).to.equal('invalid_body');
  });

  it('a JSON patch into __proto__ or constructor/prototype is 400 invalid_patch', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    for (const path of ['/__proto__/polluted', '/constructor/prototype/polluted', '/a/__proto__']) {
      const res = await req('PATCH', `/notes/${doc._id}`, {
        body: [{ op: 'add', path, value: true }],
        contentType: 'application/json-patch+json',
      });
      expect(res.status, path).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_patch');
    }
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  it('a JSON patch may not write the managed fields', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    for (const path of ['/_id', '/$version', '/$createdAt']) {
      const res = await req('PATCH', `/notes/${doc._id}`, {
        body: [{ op: 'replace', path, value: 'x' }],
        contentType: 'application/json-patch+json',
      });
      expect(res.status, path).to.equal(400);
      expect(res.body.error.code).to.equal('invalid_patch');
    }
  });

  it('PATCH on a missing document is 404', async () => {
    const res = await req('PATCH', '/notes/doc_nothing', {
      body: { a: 1 },
      contentType: 'application/merge-patch+json',
    });
    expect(res.status).to.equal(404);
  });

  it('DELETE answers 204, then the document is gone (404)', async () => {
    const doc = (await req('POST', '/notes', { body: { a: 1 } })).body;
    const res = await req('DELETE', `/notes/${doc._id}`);
    expect(res.status).to.equal(204);
    expect(res.text).to.equal('');
    expect((await req('GET', `/notes/${doc._id}`)).status).to.equal(404);
    expect((await req('DELETE', `/notes/${doc._id}`)).status).to.equal(404);
  });

  describe('If-Match', () => {
    it('a matching version lets the write through', async () => {
      const doc = (await req('POST', '/cas', { body: { a: 1 } })).body;
      const res = await req('PUT', `/cas/${doc._id}`, { body: { a: 2 }, headers: { 'If-Match': '"1"' } });
      expect(res.status).to.equal(200);
      expect(res.body.$version).to.equal(2);
    });

    it('a stale version is 412 version_mismatch on PUT, PATCH, DELETE and restore, and nothing changes', async () => {
      const doc = (await req('POST', '/cas', { body: { a: 1 } })).body;
      await req('PUT', `/cas/${doc._id}`, { body: { a: 2 } });
      const stale = { 'If-Match': '"1"' };
      const attempts = [
        await req('PUT', `/cas/${doc._id}`, { body: { a: 3 }, headers: stale }),
        await req('PATCH', `/cas/${doc._id}`, {
          body: { a: 3 },
          contentType: 'application/merge-patch+json',
          headers: stale,
        }),
        await req('DELETE', `/cas/${doc._id}`, { headers: stale }),
        await req('POST', `/cas/${doc._id}/versions/1/restore`, { headers: stale }),
      ];
      for (const res of attempts) {
        expect(res.status).to.equal(412);
        expect(res.body.error.code).to.equal('version_mismatch');
        expect(res.body.error.details.current).to.equal(2);
      }
      expect((await req('GET', `/cas/${doc._id}`)).body).to.include({ a: 2, $version: 2 });
    });

    it('If-Match: * requires the document to exist', async () => {
      const missing = await req('PUT', '/cas/star-missing', { body: { a: 1 }, headers: { 'If-Match': '*' } });
      expect(missing.status).to.equal(412);
      expect((await req('GET', '/cas/star-missing')).status).to.equal(404);
      await req('PUT', '/cas/star-present', { body: { a: 1 } });
      const present = await req('PUT', '/cas/star-present', { body: { a: 2 }, headers: { 'If-Match': '*' } });
      expect(present.status).to.equal(200);
    });

    it('a malformed If-Match is 400', async () => {
      const doc = (await req('POST', '/cas', { body: { a: 1 } })).body;
      const res = await req('PUT', `/cas/${doc._id}`, { body: { a: 2 }, headers: { 'If-Match': 'banana' } });
      expect(res.status).to.equal(400);
    });
  });
});
