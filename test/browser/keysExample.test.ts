/**
 * docs/keys.md's worked example as written: the key its curl creates, and its page served from
 * another origin in a real headless Chromium, listing and following `posts` through a stream
 * ticket. The page shows published posts only, drops one unpublished while it is open (the
 * stream's `document.removed`), and from that page an unpublished post and `customers` answer
 * as if they did not exist.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { type BrowserSession, chromiumAvailable, openBrowser } from '../support/browser.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { until } from '../support/timeout.js';

const DOC = readFileSync('docs/keys.md', 'utf8');
const example = DOC.slice(DOC.indexOf('## Example'), DOC.indexOf('## Managing rules'));

/** The body of the example's `curl -X POST .../api/keys -d '...'`. */
function keyRequestBody(): Record<string, unknown> {
  const body = /-d '(\{[\s\S]*?\})'/.exec(example)?.[1];
  if (!body) throw new Error('docs/keys.md: no key request in the example');
  return JSON.parse(body);
}

/** The example's page, pointed at this server and key. */
function examplePage(folio: string, key: string): string {
  const html = /```html\n([\s\S]*?)```/.exec(example)?.[1];
  if (!html) throw new Error('docs/keys.md: no page in the example');
  return html
    .replace("'https://folio.shop.example/shop'", JSON.stringify(folio))
    .replace("'folio_sk_live_...'", JSON.stringify(key));
}

(chromiumAvailable() ? describe : describe.skip)(
  'docs/keys.md example in Chromium (another origin)',
  function () {
    this.timeout(60_000);
    let server: TestServer;
    let tenant: Tenant;
    let browser: BrowserSession;
    let pages: Server;

    before(async () => {
      server = await startTestServer({ config: { streams: { heartbeatMs: 300, retryMs: 100 } } });
      tenant = await server.tenant({ plan: 'pro' });
      browser = await openBrowser();
    });
    after(async () => {
      await browser?.close();
      pages?.close();
      await server?.close();
    });

    const write = async (method: string, path: string, body: object) => {
      const res = await server.request(method, `/${tenant.project}${path}`, { key: tenant.key, body });
      expect(res.status, res.text).to.be.oneOf([200, 201]);
      return res.body._id as string;
    };
    const shown = () => browser.page.locator('#posts li').allTextContents();

    it('shows and follows published posts only; unpublished posts and customers stay out of reach', async () => {
      const created = await server.request('POST', '/api/keys', {
        session: tenant.session,
        body: { ...keyRequestBody(), project: tenant.project, env: 'test' },
      });
      expect(created.status, created.text).to.equal(201);
      const key = created.body.rawKey as string;

      const first = await write('POST', '/posts', { title: 'first', published: true });
      const draft = await write('POST', '/posts', { title: 'draft', published: false });
      const customer = await write('POST', '/customers', { name: 'Ada' });

      const page = examplePage(`${server.url}/${tenant.project}`, key);
      pages = createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(page));
      pages.listen(0, '127.0.0.1');
      await once(pages, 'listening');
      await browser.page.goto(`http://127.0.0.1:${(pages.address() as AddressInfo).port}/`);
      await until(async () => (await shown()).join() === 'first', 'the published post listed');

      await write('POST', '/posts', { title: 'second', published: true });
      await write('POST', '/posts', { title: 'hidden', published: false });
      await until(async () => (await shown()).sort().join() === 'first,second', 'the new post shown');
      await write('PUT', `/posts/${first}`, { title: 'first', published: false });
      await until(async () => (await shown()).join() === 'second', 'the unpublished post dropped');

      const statuses = await browser.page.evaluate(
        async ({ base, key, paths }) => {
          const answers = [];
          for (const path of paths) {
            const res = await fetch(base + path, { headers: { Authorization: `Bearer ${key}` } });
            answers.push([
              res.status,
              ((await res.json()) as { error?: { code?: string } }).error?.code ?? null,
            ]);
          }
          return answers;
        },
        {
          base: `${server.url}/${tenant.project}`,
          key,
          paths: [`/posts/${draft}`, `/posts/${first}/versions`, `/customers/${customer}`, '/customers'],
        },
      );
      expect(statuses).to.deep.equal([
        [404, 'not_found'],
        [404, 'not_found'],
        [404, 'not_found'],
        [404, 'not_found'],
      ]);
    });
  },
);
