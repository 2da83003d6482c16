/**
 * The client library (client/folio.js) against a real server, every method once, in Node; the
 * suite's contract check validates each answer the server sent against the OpenAPI document.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { type Collection, createClient, FolioError } from '../../client/folio.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { rejection } from '../support/timeout.js';

interface Post {
  title: string;
  stars: number;
  tags?: string[];
}

describe('client library: documents and queries', () => {
  let server: TestServer;
  let tenant: Tenant;
  let name = 0;
  /** A fresh collection of the tenant's project. */
  const posts = (): Collection<Post> =>
    createClient({ baseUrl: server.url, key: tenant.key })
      .project(tenant.project)
      .collection<Post>(`posts${++name}`);

  before(async () => {
    server = await startTestServer();
    tenant = await server.tenant({ plan: 'pro' });
  });
  after(() => server?.close());

  it('create, get, replace, patch (merge), jsonPatch and delete, with ifVersion as If-Match', async () => {
    const c = posts();
    const created = await c.create({ title: 'a', stars: 1 });
    expect(created).to.include({ title: 'a', stars: 1, $version: 1 });
    expect(await c.get(created._id)).to.deep.equal(created);
    const replaced = await c.replace(created._id, { title: 'b', stars: 2 }, { ifVersion: 1 });
    expect(replaced).to.include({ title: 'b', $version: 2 });
    const patched = await c.patch(created._id, { stars: 3, tags: ['x'] });
    expect(patched).to.include({ title: 'b', stars: 3, $version: 3 });
    const unset = await c.patch(created._id, { tags: null });
    expect(unset).not.to.have.property('tags');
    const jsonPatched = await c.jsonPatch(created._id, [{ op: 'replace', path: '/title', value: 'c' }]);
    expect(jsonPatched).to.include({ title: 'c', $version: 5 });
    const stale = await rejection(c.patch(created._id, { stars: 9 }, { ifVersion: 1 }));
    expect(stale).to.be.instanceOf(FolioError).and.include({ status: 412 });
    await c.delete(created._id, { ifVersion: 5 });
    const gone = await rejection(c.get(created._id));
    expect(gone).to.be.instanceOf(FolioError).and.include({ status: 404, code: 'not_found' });
    expect((gone as FolioError).requestId)
      .to.be.a('string')
      .and.not.equal('');
    const withId = await c.create({ _id: 'fixed', title: 'd', stars: 0 });
    expect(withId._id).to.equal('fixed');
    await c.delete('fixed', { purge: true });
  });

  it('throws one error class with status, code, message, details and the request id', async () => {
    const c = posts();
    const error = (await rejection(c.list({ filter: { stars: { near: 1 } as never } }))) as FolioError;
    expect(error).to.be.instanceOf(FolioError).and.instanceOf(Error);
    expect(error).to.include({ status: 400, code: 'invalid_query', name: 'FolioError' });
    expect(error.message).to.be.a('string').and.not.equal('');
    expect(error.details).to.be.an('object');
    expect(error.requestId).to.match(/\S/);
  });

  it('lists with every filter operator, `in` as an array, sort, select, limit and the cursor; counts', async () => {
    const c = posts();
    const titles = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    for (const [i, title] of titles.entries())
      await c.create({ title, stars: i, ...(i % 2 === 0 ? { tags: ['even'] } : {}) });
    const titlesOf = async (filter: Parameters<typeof c.list>[0]) =>
      (await c.list({ sort: 'stars', ...filter })).data.map((d) => d.title);
    expect(await titlesOf({ filter: { title: 'beta' } })).to.deep.equal(['beta']);
    expect(await titlesOf({ filter: { stars: { eq: 2 } } })).to.deep.equal(['gamma']);
    expect(await titlesOf({ filter: { stars: { neq: 2 } } })).to.deep.equal([
      'alpha',
      'beta',
      'delta',
      'epsilon',
    ]);
    expect(await titlesOf({ filter: { stars: { gt: 3 } } })).to.deep.equal(['epsilon']);
    expect(await titlesOf({ filter: { stars: { gte: 3 } } })).to.deep.equal(['delta', 'epsilon']);
    expect(await titlesOf({ filter: { stars: { lt: 1 } } })).to.deep.equal(['alpha']);
    expect(await titlesOf({ filter: { stars: { lte: 1 } } })).to.deep.equal(['alpha', 'beta']);
    expect(await titlesOf({ filter: { title: { contains: 'lt' } } })).to.deep.equal(['delta']);
    expect(await titlesOf({ filter: { title: { in: ['beta', 'delta'] } } })).to.deep.equal(['beta', 'delta']);
    expect(await titlesOf({ filter: { tags: { exists: true } } })).to.deep.equal([
      'alpha',
      'gamma',
      'epsilon',
    ]);
    expect(await titlesOf({ filter: { stars: { gte: 1, lte: 3 } }, sort: ['-stars'] })).to.deep.equal([
      'delta',
      'gamma',
      'beta',
    ]);
    const selected = await c.list({ select: ['title'], sort: 'title', limit: 2 });
    expect(selected.data.map((d) => Object.keys(d).sort())).to.deep.equal([
      ['_id', 'title'],
      ['_id', 'title'],
    ]);
    expect(selected.meta).to.include({ total: 5, limit: 2, hasMore: true });
    const next = await c.list({ sort: 'title', limit: 2, after: selected.meta.next as string });
    expect(next.data.map((d) => d.title)).to.deep.equal(['delta', 'epsilon']);
    expect(await c.list({ offset: 4, sort: 'stars' }).then((p) => p.data.map((d) => d.title))).to.deep.equal([
      'epsilon',
    ]);
    expect(await c.count()).to.equal(5);
    expect(await c.count({ filter: { stars: { in: [0, 4] } } })).to.equal(2);
  });

  it('iterates over every page through the cursor (for await)', async () => {
    const c = posts();
    await c.bulk(
      Array.from({ length: 7 }, (_, i) => ({ method: 'POST' as const, body: { title: `t${i}`, stars: i } })),
    );
    const seen: number[] = [];
    for await (const doc of c.iterate({ sort: '-stars', limit: 3, filter: { stars: { gte: 1 } } }))
      seen.push(doc.stars);
    expect(seen).to.deep.equal([6, 5, 4, 3, 2, 1]);
  });

  it('versions, version, diff and restore', async () => {
    const c = posts();
    const doc = await c.create({ title: 'v1', stars: 1 });
    await c.patch(doc._id, { title: 'v2' });
    const versions = await c.versions(doc._id);
    expect(versions.map((v) => [v.version, v.operation])).to.deep.equal([
      [2, 'patch'],
      [1, 'create'],
    ]);
    expect(await c.version(doc._id, 1)).to.include({ title: 'v1', $version: 1 });
    const diff = await c.diff(doc._id, 1, 2);
    expect(diff.changes).to.deep.equal([{ path: 'title', type: 'changed', from: 'v1', to: 'v2' }]);
    const restored = await c.restore(doc._id, 1, { ifVersion: 2 });
    expect(restored).to.include({ title: 'v1', $version: 3 });
  });

  it('bulk: each operation alone and in order, one result each', async () => {
    const c = posts();
    const result = await c.bulk([
      { method: 'POST', id: 'b1', body: { title: 'one', stars: 1 } },
      { method: 'PUT', id: 'b2', body: { title: 'two', stars: 2 } },
      { method: 'PATCH', id: 'b1', body: { stars: 5 } },
      { method: 'DELETE', id: 'missing' },
    ]);
    expect(result.results.map((r) => r.status)).to.deep.equal([201, 201, 200, 404]);
    expect(result.summary).to.deep.equal({ total: 4, succeeded: 3, failed: 1 });
    expect((await c.get('b1')).stars).to.equal(5);
  });

  it('imports JSON, NDJSON and CSV, and exports a stream in each format', async () => {
    const c = posts();
    expect(await c.import([{ _id: 'j1', title: 'json', stars: 1 }])).to.include({ imported: 1, total: 1 });
    expect(await c.import('{"_id":"n1","title":"nd","stars":2}\n')).to.include({ imported: 1 });
    expect(await c.import('_id,title,stars\nc1,csv,3\n')).to.include({ imported: 1 });
    const conflict = await rejection(c.import([{ _id: 'j1', title: 'again', stars: 0 }]));
    expect(conflict).to.be.instanceOf(FolioError).and.include({ status: 409 });
    expect(await c.import([{ _id: 'j1', title: 'again', stars: 0 }], { onConflict: 'skip' })).to.include({
      skipped: 1,
    });
    const text = async (stream: ReadableStream<Uint8Array>) => new Response(stream).text();
    const json = JSON.parse(await text(await c.export({ sort: '_id' })));
    expect(json.map((d: { _id: string }) => d._id)).to.deep.equal(['c1', 'j1', 'n1']);
    const ndjson = await text(
      await c.export({ format: 'ndjson', filter: { stars: { gte: 2 } }, sort: 'stars' }),
    );
    expect(
      ndjson
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)._id),
    ).to.deep.equal(['n1', 'c1']);
    const csv = await text(await c.export({ format: 'csv', filter: { _id: 'c1' }, formulaEscape: false }));
    expect(csv.split(/\r?\n/)[0]).to.include('title');
    expect(csv).to.include('csv');
  });

  it('works with a read-only key: reads pass, writes throw 403 (and a baseUrl may end in a slash)', async () => {
    const readOnly = (await tenant.newKey({ scope: 'read-only' })).rawKey;
    const collection = `posts${++name}`;
    const writer = createClient({ baseUrl: server.url, key: tenant.key }).project(tenant.project);
    const reader = createClient({ baseUrl: `${server.url}/`, key: readOnly }).project(tenant.project);
    await writer.collection<Post>(collection).create({ title: 'r', stars: 1 });
    expect(await reader.collection<Post>(collection).count()).to.equal(1);
    const refused = await rejection(reader.collection<Post>(collection).create({ title: 'w', stars: 1 }));
    expect(refused).to.be.instanceOf(FolioError).and.include({ status: 403 });
  });
});

describe('client library: served to browsers', () => {
  it('serves its modules as they are in client/ at /dashboard/client/, to pages of any origin', async () => {
    const server = await startTestServer();
    try {
      for (const file of ['folio.js', 'http.js', 'changes.js']) {
        const res = await fetch(`${server.url}/dashboard/client/${file}`, {
          headers: { Origin: 'https://app.example' },
        });
        expect(res.status, file).to.equal(200);
        expect(res.headers.get('content-type')).to.match(/^text\/javascript/);
        expect(res.headers.get('access-control-allow-origin')).to.be.oneOf(['*', 'https://app.example']);
        expect(await res.text()).to.equal(
          readFileSync(new URL(`../../client/${file}`, import.meta.url), 'utf8'),
        );
      }
    } finally {
      await server.close();
    }
  });
});
