/**
 * Regression tests for requests that once answered 500 or broke the process for every tenant
 * (field names that are Object.prototype's, NUL in paths, deep bodies, huge arrays, odd methods,
 * patches the patch library chokes on). Each asserts the clear 4xx, or the correct answer where
 * the name is an ordinary field name, and that nothing changed.
 */

import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import { brotliCompressSync } from 'node:zlib';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

const deep = (levels: number, leaf: unknown = 1): unknown => {
  let value = leaf;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value;
};
/** JSON text nested `levels` deep, built as text: JSON.stringify itself overflows on such values. */
const deepText = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

/** A request with any method (fetch refuses TRACE and friends). */
function rawRequest(url: string, method: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'] ?? '', body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

forEachStore(
  'hostile input',
  (ctx) => {
    const p = (s: string) => `/${ctx.tenant.project}${s}`;
    const req = (method: string, s: string, options: Parameters<typeof ctx.server.request>[2] = {}) =>
      ctx.server.request(method, p(s), { key: ctx.tenant.key, ...options });
    const ids = (res: { body: { data: Array<{ _id: string }> } }) => res.body.data.map((d) => d._id);

    before(async () => {
      for (const body of [
        { _id: 'one', constructor: 'a', valueOf: 2, hasOwnProperty: true, toString: { x: 1 } },
        { _id: 'two', n: 2 },
        { _id: 'three', constructor: 'b', valueOf: 1 },
      ]) {
        const res = await req('POST', '/proto', { body });
        expect(res.status, res.text).to.equal(201);
      }
    });

    it('__proto__ in select, filter or sort is 400 naming the parameter, and every tenant is still served', async () => {
      const cases = [
        ['select=__proto__.x', 'select'],
        ['select=a.__proto__', 'select'],
        ['filter[__proto__]=1', 'filter[__proto__]'],
        ['filter[a.__proto__][exists]=true', 'filter[a.__proto__][exists]'],
        ['sort=__proto__', 'sort'],
        ['sort=-__proto__', 'sort'],
      ] as const;
      for (const [query, param] of cases) {
        const res = await req('GET', `/proto?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_query');
        expect(res.body.error.details.param, query).to.equal(param);
      }
      const health = await ctx.server.request('GET', '/healthz');
      expect(health.status).to.equal(200);
      expect(health.body.status).to.equal('ok');
      const other = await ctx.server.tenant();
      const write = await ctx.server.request('POST', `/${other.project}/c`, {
        key: other.key,
        body: { ok: 1 },
      });
      expect(write.status).to.equal(201);
      expect(({} as Record<string, unknown>).x, 'Object.prototype is untouched').to.equal(undefined);
    });

    it('constructor, valueOf, hasOwnProperty and toString are ordinary fields to filter, sort and select', async () => {
      expect(ids(await req('GET', '/proto?filter[constructor]=a'))).to.deep.equal(['one']);
      expect(ids(await req('GET', '/proto?filter[constructor][exists]=false'))).to.deep.equal(['two']);
      expect(ids(await req('GET', '/proto?filter[hasOwnProperty][exists]=true'))).to.deep.equal(['one']);
      expect(ids(await req('GET', '/proto?filter[hasOwnProperty]=true'))).to.deep.equal(['one']);
      expect(ids(await req('GET', '/proto?filter[toString.x]=1'))).to.deep.equal(['one']);
      expect(ids(await req('GET', '/proto?filter[valueOf][gte]=1&sort=-valueOf'))).to.deep.equal([
        'one',
        'three',
      ]);
      // Missing sorts lowest, as null does in MongoDB.
      expect(ids(await req('GET', '/proto?sort=valueOf'))).to.deep.equal(['two', 'three', 'one']);
      expect(ids(await req('GET', '/proto?sort=-constructor'))).to.deep.equal(['three', 'one', 'two']);
      const selected = await req('GET', '/proto?select=constructor,toString.x&sort=_id');
      expect(selected.status).to.equal(200);
      expect(selected.body.data).to.deep.equal([
        { _id: 'one', constructor: 'a', toString: { x: 1 } },
        { _id: 'three', constructor: 'b' },
        { _id: 'two' },
      ]);
      const nested = await req('GET', '/proto?select=constructor.prototype&sort=_id');
      expect(nested.status).to.equal(200);
      expect(nested.body.data).to.deep.equal([{ _id: 'one' }, { _id: 'three' }, { _id: 'two' }]);
    });

    it('control characters in filter, sort and select paths are 400 naming the parameter', async () => {
      for (const [query, param] of [
        ['filter[a%00b]=5', 'filter[a\u0000b]'],
        ['filter[x.a%01][gt]=1', 'filter[x.a\u0001][gt]'],
        ['sort=a%00b', 'sort'],
        ['select=a%1Fb', 'select'],
        ['filter[a%7F]=1', 'filter[a\u007f]'],
      ] as const) {
        const res = await req('GET', `/proto?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.error.details.param, query).to.equal(param);
      }
    });

    it('control characters and __proto__ in body field names are 400 at any depth, nothing written', async () => {
      // A document of its own, so its version says what this case wrote.
      expect((await req('PUT', '/ctlmerge/two', { body: { n: 2 } })).status).to.equal(201);
      for (const rawBody of [
        '{"a\\u0000b":1}',
        '{"x":{"a\\u0007":1}}',
        '{"x":[{"\\u001f":1}]}',
        '{"x":{"__proto__":1}}',
      ]) {
        const res = await req('POST', '/ctl', { rawBody });
        expect(res.status, rawBody).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_body');
      }
      const merge = await req('PATCH', '/ctlmerge/two', {
        rawBody: '{"a\\u0000":1}',
        contentType: 'application/merge-patch+json',
      });
      expect(merge.status).to.equal(400);
      const list = await req('GET', '/ctl');
      expect(list.body.meta.total).to.equal(0);
      expect((await req('GET', '/ctlmerge/two')).body.$version).to.equal(1);
    });

    it('bodies nested past 64 levels are 400 on every write, patches included, and change nothing', async () => {
      // A document of its own, so its version says what this case wrote.
      expect((await req('PUT', '/deepdoc/two', { body: { n: 2 } })).status).to.equal(201);
      const tooDeep = deepText(5000);
      for (const [method, path, rawBody, contentType] of [
        ['POST', '/deep', `{"x":${tooDeep}}`, 'application/json'],
        ['PUT', '/deep/x', `{"x":${tooDeep}}`, 'application/json'],
        ['PATCH', '/deepdoc/two', `{"x":${tooDeep}}`, 'application/merge-patch+json'],
        [
          'PATCH',
          '/deepdoc/two',
          `[{"op":"add","path":"/x","value":${tooDeep}}]`,
          'application/json-patch+json',
        ],
        [
          'PATCH',
          '/deepdoc/two',
          `[{"op":"test","path":"/n","value":${tooDeep}}]`,
          'application/json-patch+json',
        ],
      ] as const) {
        const res = await req(method, path, { rawBody, contentType });
        expect(res.status, `${method} ${contentType}`).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_body');
      }
      expect((await req('GET', '/deep')).body.meta.total).to.equal(0);
      // At the boundary: a patch value of 64 levels is accepted as a field of the document only
      // while the document stays within 64 levels.
      const edge = await req('PATCH', '/deepdoc/two', {
        body: [{ op: 'add', path: '/x', value: deep(63) }],
        contentType: 'application/json-patch+json',
      });
      expect(edge.status, edge.text).to.equal(200);
      const over = await req('PATCH', '/deepdoc/two', {
        body: [{ op: 'add', path: '/y', value: deep(64) }],
        contentType: 'application/json-patch+json',
      });
      expect(over.status).to.equal(400);
      const doc = await req('GET', '/deepdoc/two');
      expect(doc.body.$version).to.equal(2);
      expect(doc.body).to.not.have.property('y');
    });

    it('JSON patches the patch library cannot apply are 4xx, never 500, and write nothing', async () => {
      const created = await req('POST', '/patchy', { body: { _id: 'd', a: { k: 1 }, list: [1] } });
      expect(created.status).to.equal(201);
      const patch = (body: unknown) =>
        req('PATCH', '/patchy/d', { body, contentType: 'application/json-patch+json' });
      const cases: Array<[unknown, number]> = [
        [[{ op: 'move', from: '/a', path: '/a/b' }], 400],
        [
          [
            { op: 'remove', path: '' },
            { op: 'add', path: '/x', value: 1 },
          ],
          409,
        ],
        [[{ op: 'copy', from: '/constructor', path: '/x' }], 409],
        [[{ op: 'move', from: '/toString', path: '/x' }], 409],
        [[{ op: 'replace', path: '/constructor', value: 1 }], 409],
        [[{ op: 'remove', path: '/valueOf' }], 409],
        [[{ op: 'add', path: '/constructor/x', value: 1 }], 409],
        [[{ op: 'test', path: '/hasOwnProperty', value: null }], 409],
        [[{ op: 'add', path: '/list/length', value: 1 }], 409],
        [Array.from({ length: 1001 }, () => ({ op: 'test', path: '/a', value: { k: 1 } })), 400],
      ];
      for (const [body, status] of cases) {
        const res = await patch(body);
        expect(res.status, JSON.stringify(body).slice(0, 80)).to.equal(status);
        expect(res.body.error.code).to.be.oneOf(['invalid_patch', 'patch_failed']);
      }
      expect((await req('GET', '/patchy/d')).body.$version).to.equal(1);
      // A root replace followed by more operations applies them to the new root.
      const rooted = await patch([
        { op: 'replace', path: '', value: { x: 1 } },
        { op: 'add', path: '/y', value: 2 },
        { op: 'add', path: '/constructor', value: 3 },
      ]);
      expect(rooted.status, rooted.text).to.equal(200);
      expect(rooted.body).to.include({ x: 1, y: 2, constructor: 3, $version: 2 });
      const limit = await patch(Array.from({ length: 1000 }, () => ({ op: 'test', path: '/x', value: 1 })));
      expect(limit.status, 'exactly 1,000 operations are allowed').to.equal(200);
    });

    it('a patch that copies the document past its size limit is 413 and writes nothing', async () => {
      await req('PUT', '/patchy/big', { body: { a: 'x'.repeat(1000) } });
      const ops = [{ op: 'copy', from: '/a', path: '/b' }];
      for (let i = 0; i < 40; i++) ops.push({ op: 'copy', from: '', path: `/c${i}` });
      const res = await req('PATCH', '/patchy/big', {
        body: ops,
        contentType: 'application/json-patch+json',
      });
      expect(res.status, res.text).to.equal(413);
      expect(res.body.error.code).to.equal('payload_too_large');
      expect((await req('GET', '/patchy/big')).body.$version).to.equal(1);
    });

    it('sorting on a field holding a 130,000-element array answers 200', async () => {
      const big = Array.from({ length: 130_000 }, (_, i) => i % 10);
      const created = await req('POST', '/arrays', { body: { _id: 'big', arr: big } });
      expect(created.status, created.text).to.equal(201);
      await req('POST', '/arrays', { body: { _id: 'small', arr: [5] } });
      const asc = await req('GET', '/arrays?sort=arr&select=_id');
      expect(asc.status, asc.text).to.equal(200);
      expect(ids(asc)).to.deep.equal(['big', 'small']);
      const desc = await req('GET', '/arrays?sort=-arr&select=_id');
      expect(ids(desc)).to.deep.equal(['big', 'small']);
    });

    it('a contains value is bounded at 1,000 characters', async () => {
      const at = await req('GET', `/proto?filter[constructor][contains]=${'a'.repeat(1000)}`);
      expect(at.status).to.equal(200);
      for (const length of [1001, 13_000]) {
        const res = await req('GET', `/proto?filter[constructor][contains]=${'a'.repeat(length)}`);
        expect(res.status, String(length)).to.equal(400);
        expect(res.body.error.details.param).to.equal('filter[constructor][contains]');
      }
    });

    it('a body that is not the brotli its Content-Encoding says is 400; real brotli is read', async () => {
      const bad = await req('POST', '/br', { rawBody: 'not brotli', headers: { 'Content-Encoding': 'br' } });
      expect(bad.status).to.equal(400);
      expect(bad.body.error.code).to.equal('invalid_body');
      const res = await fetch(`${ctx.server.url}${p('/br')}`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${ctx.tenant.key}`,
          'Content-Type': 'application/json',
          'Content-Encoding': 'br',
        },
        body: brotliCompressSync(Buffer.from('{"z":1}')),
      });
      expect(res.status).to.equal(201);
    });
  },
  { plan: 'pro' },
);

describe('hostile requests before authentication', () => {
  let server: TestServer;
  const logged: Array<{ level: number; msg: string }> = [];

  before(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) logged.push(JSON.parse(line));
        done();
      },
    });
    server = await startTestServer({ logStream: sink });
  });
  after(() => server.close());

  it('unknown HTTP methods get a JSON 501 with no key, and log no error or stack trace', async () => {
    for (const method of [
      'PROPFIND',
      'TRACE',
      'MKCOL',
      'LOCK',
      'UNLOCK',
      'COPY',
      'MOVE',
      'SEARCH',
      'PURGE',
    ]) {
      for (const path of ['/app/notes', '/app/notes/x', '/healthz', '/nowhere']) {
        const res = await rawRequest(`${server.url}${path}`, method);
        expect(res.status, `${method} ${path}`).to.equal(501);
        expect(res.type).to.match(/application\/json/);
        expect(JSON.parse(res.body).error.code).to.equal('not_implemented');
      }
    }
    expect(logged.filter((line) => line.level >= 50)).to.deep.equal([]);
  });

  it('a plain OPTIONS (not a preflight) answers JSON naming the allowed methods', async () => {
    const res = await server.request('OPTIONS', '/healthz');
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/application\/json/);
    expect(res.body.allow).to.include('GET');
    expect(res.headers.get('allow')).to.include('GET');
  });
});
