/**
 * A page in a real headless Chromium that uses only the native `EventSource` and a read-only
 * key: it mints a stream ticket (its key in an Authorization header, never in a URL), opens the
 * stream, receives live events, and resumes exactly after the connection is cut (a TCP proxy
 * between the browser and Folio), also when the cut comes before the first event.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserSession, chromiumAvailable, openBrowser } from '../support/browser.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { eventually } from '../support/timeout.js';

/**
 * The page's code, as docs/streams.md shows it (a string: it runs in the page, whose DOM types
 * this Node project does not compile against). Records what the page's handlers get.
 */
const SUBSCRIBE = `async ({ project, collection, key }) => {
  window.received = [];
  window.unexpected = [];
  window.opens = 0;
  const res = await fetch('/' + project + '/' + collection + '/_stream/tickets', {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + key },
  });
  const { url } = await res.json();
  const source = new EventSource(url);
  source.addEventListener('document.created', (e) => {
    window.received.push({ id: e.lastEventId, doc: JSON.parse(e.data).document._id });
  });
  source.onmessage = (e) => window.unexpected.push(e.data);
  source.onopen = () => { window.opens += 1; };
  window.source = source;
  await new Promise((resolve) => source.addEventListener('open', resolve, { once: true }));
}`;

interface PageState {
  received: { id: string; doc: string }[];
  unexpected: string[];
  opens: number;
  readyState: number;
}

function state(page: Page): Promise<PageState> {
  return page.evaluate(
    '({ received: window.received, unexpected: window.unexpected, opens: window.opens, readyState: window.source.readyState })',
  );
}

(chromiumAvailable() ? describe : describe.skip)(
  'change streams in Chromium (native EventSource, stream ticket)',
  function () {
    this.timeout(60_000);
    let server: TestServer;
    let tenant: Tenant;
    let proxy: TcpProxy;
    let browser: BrowserSession;
    let readOnlyKey: string;
    const urls: string[] = [];

    before(async () => {
      server = await startTestServer({
        config: {
          streams: { heartbeatMs: 300, retryMs: 100, keyCheckMs: 1000, bufferLimit: 50, maxPerKey: 10 },
        },
      });
      tenant = await server.tenant({ plan: 'pro' });
      readOnlyKey = (await tenant.newKey({ scope: 'read-only' })).rawKey;
      proxy = await startTcpProxy(server.url);
      browser = await openBrowser();
      browser.page.on('request', (request) => urls.push(request.url()));
    });

    after(async () => {
      await browser?.close();
      await proxy?.close();
      await server?.close();
    });

    const post = async (collection: string, n: number) => {
      const res = await server.request('POST', `/${tenant.project}/${collection}`, {
        key: tenant.key,
        body: { n },
      });
      expect(res.status).to.equal(201);
      return res.body._id as string;
    };

    const subscribe = async (collection: string) => {
      const page = browser.page;
      // The page is served from Folio's origin (through the proxy), as a front end would be.
      await page.goto(`${proxy.url}/healthz`);
      await page.evaluate(
        `(${SUBSCRIBE})(${JSON.stringify({ project: tenant.project, collection, key: readOnlyKey })})`,
      );
      return page;
    };

    it('receives live events, and after a cut resumes with every event exactly once, in order', async () => {
      const page = await subscribe('live');
      const written = [await post('live', 0), await post('live', 1)];
      await eventually(async () => expect((await state(page)).received).to.have.length(2));
      proxy.cut();
      for (let n = 2; n < 5; n++) written.push(await post('live', n));
      await eventually(async () => expect((await state(page)).received).to.have.length(5));
      written.push(await post('live', 5));
      await eventually(async () => expect((await state(page)).received).to.have.length(6));
      const seen = await state(page);
      expect(seen.received.map((r) => r.doc)).to.deep.equal(written);
      expect(seen.unexpected).to.deep.equal([]);
      expect(seen.opens).to.be.at.least(2);
      expect(seen.readyState).to.equal(1);
    });

    it('resumes exactly after a cut that comes before the first event (the stream starts with an id)', async () => {
      const page = await subscribe('early');
      proxy.cut();
      const written = [await post('early', 0)];
      await eventually(async () => expect((await state(page)).received).to.have.length(1));
      written.push(await post('early', 1));
      await eventually(async () => expect((await state(page)).received).to.have.length(2));
      const seen = await state(page);
      expect(seen.received.map((r) => r.doc)).to.deep.equal(written);
      expect(seen.opens).to.be.at.least(2);
    });

    it('never puts the key in a URL', () => {
      expect(urls.some((url) => url.includes('/_stream?ticket=st1_'))).to.equal(true);
      for (const url of urls) expect(url).not.to.include(readOnlyKey);
    });
  },
);
