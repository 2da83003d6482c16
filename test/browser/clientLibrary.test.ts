/**
 * The client library in a real headless Chromium, imported by URL from Folio
 * (`/dashboard/client/folio.js`) into a page served from another origin, which the project
 * allows: every method with a read-write key, then `subscribe` with a read-only key through a
 * TCP proxy that cuts the connections, and across a server restart, each event exactly once and
 * in order, over the native EventSource with a stream ticket and never a key in a URL.
 */
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type BrowserSession, chromiumAvailable, openBrowser } from '../support/browser.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { until } from '../support/timeout.js';

/** Every method, in the page (a string: it runs there, where this project's types do not). */
const EVERY_METHOD = `async ({ api, project, key }) => {
  const { createClient, FolioError } = await import(api + '/dashboard/client/folio.js');
  const posts = createClient({ baseUrl: api, key }).project(project).collection('posts');
  const out = {};
  const a = await posts.create({ title: 'a', stars: 1 });
  out.get = (await posts.get(a._id)).title;
  out.replace = (await posts.replace(a._id, { title: 'b', stars: 2 }, { ifVersion: 1 })).$version;
  out.patch = (await posts.patch(a._id, { stars: 3 })).stars;
  out.jsonPatch = (await posts.jsonPatch(a._id, [{ op: 'replace', path: '/title', value: 'c' }])).title;
  try {
    await posts.patch(a._id, { stars: 0 }, { ifVersion: 1 });
  } catch (e) {
    out.stale = [e instanceof FolioError, e.status, e.code, /\\S/.test(e.requestId)];
  }
  const bulk = await posts.bulk([
    { method: 'POST', body: { title: 'd', stars: 4 } },
    { method: 'POST', body: { title: 'e', stars: 5 } },
  ]);
  out.bulk = bulk.summary.succeeded;
  const listed = await posts.list({ filter: { stars: { in: [3, 5] } }, sort: '-stars', select: ['title'] });
  out.list = listed.data.map((d) => d.title);
  out.count = await posts.count({ filter: { stars: { gte: 4 } } });
  out.iterate = [];
  for await (const d of posts.iterate({ sort: 'stars', limit: 1 })) out.iterate.push(d.stars);
  out.versions = (await posts.versions(a._id)).map((v) => v.version);
  out.version = (await posts.version(a._id, 1)).title;
  out.diff = (await posts.diff(a._id, 1, 2)).changes.map((c) => c.path);
  out.restore = (await posts.restore(a._id, 1)).title;
  out.import = (await posts.import('{"_id":"n1","title":"nd","stars":6}\\n')).imported;
  const exported = await new Response(await posts.export({ format: 'ndjson', sort: 'stars' })).text();
  out.export = exported.trim().split('\\n').map((line) => JSON.parse(line).stars);
  await posts.delete(a._id);
  out.deleted = await posts.get(a._id).catch((e) => e.status);
  return out;
}`;

const SUBSCRIBE = `async ({ api, project, key }) => {
  const { createClient } = await import(api + '/dashboard/client/folio.js');
  window.received = [];
  window.problems = [];
  window.stop = createClient({ baseUrl: api, key }).project(project).collection('live').subscribe(
    {},
    (event) => window.received.push(event.document._id),
    { onReset: (info) => window.problems.push(info), onError: (e) => window.problems.push(String(e)) },
  );
}`;

(chromiumAvailable() ? describe : describe.skip)('client library in Chromium (another origin)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenant: Tenant;
  let proxy: TcpProxy;
  let browser: BrowserSession;
  let pages: Server;
  let readOnlyKey: string;
  let dataDir: string;
  const urls: string[] = [];
  const STREAMS = { streams: { heartbeatMs: 300, retryMs: 100 } };

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-client-browser-'));
    server = await startTestServer({ dataDir, config: STREAMS });
    tenant = await server.tenant({ plan: 'pro' });
    readOnlyKey = (await tenant.newKey({ scope: 'read-only' })).rawKey;
    proxy = await startTcpProxy(server.url);
    // The application's own origin: another port, so every call to Folio is cross-origin.
    pages = createServer((_req, res) =>
      res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html>'),
    );
    pages.listen(0, '127.0.0.1');
    await once(pages, 'listening');
    const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
    const projects = await server.request('GET', '/api/projects', { session: tenant.session });
    const allowed = await server.request('PATCH', `/api/projects/${projects.body.projects[0].id}`, {
      session: tenant.session,
      body: { allowedOrigins: [origin] },
    });
    expect(allowed.status, allowed.text).to.equal(200);
    browser = await openBrowser();
    browser.page.on('request', (request) => urls.push(request.url()));
    await browser.page.goto(`${origin}/`);
  });

  after(async () => {
    await browser?.close();
    pages?.close();
    await proxy?.close();
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const run = (script: string, key: string) =>
    browser.page.evaluate(`(${script})(${JSON.stringify({ api: proxy.url, project: tenant.project, key })})`);

  it('imports the library by URL and calls every method with a read-write key', async () => {
    expect(await run(EVERY_METHOD, tenant.key)).to.deep.equal({
      get: 'a',
      replace: 2,
      patch: 3,
      jsonPatch: 'c',
      stale: [true, 412, 'version_mismatch', true],
      bulk: 2,
      list: ['e', 'c'],
      count: 2,
      iterate: [3, 4, 5],
      versions: [4, 3, 2, 1],
      version: 'a',
      diff: ['stars', 'title'],
      restore: 'a',
      import: 1,
      export: [1, 4, 5, 6],
      deleted: 404,
    });
  });

  const openStreams = () => server.running.services.streams.openCount;
  /** Documents written to `live` (ids in order), and the ids the page's subscription received. */
  const liveWrites = () => {
    const written: string[] = [];
    const post = async () => {
      const res = await server.request('POST', `/${tenant.project}/live`, { key: tenant.key, body: {} });
      written.push(res.body._id);
    };
    const received = () => browser.page.evaluate('window.received') as Promise<string[]>;
    return { written, post, received };
  };

  it('subscribes with a read-only key and gets every event exactly once, in order, through cuts', async () => {
    await run(SUBSCRIBE, readOnlyKey);
    await until(() => openStreams() === 1, 'the stream to open');
    const { written, post, received } = liveWrites();
    for (let round = 0; round < 3; round++) {
      await post();
      await post();
      await until(async () => (await received()).length === written.length, 'the events so far');
      const before = proxy.connections;
      proxy.cut();
      await post(); // while it is away
      await until(() => proxy.connections > before && openStreams() === 1, 'the reconnection');
    }
    await post();
    await until(async () => (await received()).length >= written.length, 'every event');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await received()).to.deep.equal(written);
    expect(await browser.page.evaluate('window.problems')).to.deep.equal([]);
    await browser.page.evaluate('window.stop()');
    await until(() => openStreams() === 0, 'the stream to close');
  });

  it('subscribes across a server restart behind the proxy: exactly once, in order', async () => {
    await run(SUBSCRIBE, readOnlyKey);
    await until(() => openStreams() === 1, 'the stream to open');
    const { written, post, received } = liveWrites();
    await post();
    await until(async () => (await received()).length === 1, 'the first event');
    const { port } = new URL(server.url);
    await server.close();
    server = await startTestServer({ dataDir, config: { ...STREAMS, port: Number(port) } });
    await post();
    await until(() => openStreams() === 1, 'the reconnection');
    await post();
    await until(async () => (await received()).length >= 3, 'every event');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await received()).to.deep.equal(written);
    expect(await browser.page.evaluate('window.problems')).to.deep.equal([]);
    await browser.page.evaluate('window.stop()');
  });

  it('opened the stream with a ticket, and never put a key in a URL', () => {
    expect(urls.some((url) => url.includes('/_stream?ticket=st1_'))).to.equal(true);
    for (const url of urls) {
      expect(url).not.to.include(readOnlyKey);
      expect(url).not.to.include(tenant.key);
    }
  });
});
