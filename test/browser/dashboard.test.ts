/**
 * The dashboard end to end in a real headless Chromium against a real Folio: sign up, create a
 * key, create a document through the API, see it in the browser, query, edit, diff, restore,
 * rotate the key and see the old one fail, refuse a cross-site form post, log out. Screenshots of
 * the main pages go to test-output/screenshots/.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserSession, chromiumAvailable, openBrowser, screenshot } from '../support/browser.js';
import { type Receiver, startReceiver, verifySignature } from '../support/receiver.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/timeout.js';

/**
 * Inputs, selects, text areas and buttons without an accessible name (none expected). A script
 * string: it runs in the page, whose DOM types this Node project does not compile against.
 */
const UNNAMED_CONTROLS = `[...document.querySelectorAll('input, select, textarea, button')]
  .filter((el) => {
    const labelled = (el.labels?.length ?? 0) > 0;
    const aria = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby');
    const text = el.tagName === 'BUTTON' && el.textContent.trim() !== '';
    return !(labelled || aria || text);
  })
  .map((el) => el.outerHTML.slice(0, 160))`;

function unnamedControls(page: Page): Promise<string[]> {
  return page.evaluate(UNNAMED_CONTROLS);
}

(chromiumAvailable() ? describe : describe.skip)('dashboard in Chromium', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: BrowserSession;
  let page: Page;
  const email = `browser-${Date.now()}@example.test`;
  const password = 'correct horse battery';
  let rawKey = '';
  let docId = '';
  let receiver: Receiver;
  const api = (method: string, path: string, body?: unknown, key = rawKey) =>
    server.request(method, `/shop${path}`, { key, ...(body === undefined ? {} : { body }) });

  before(async () => {
    server = await startTestServer({
      // The plans' own rate limits, as the Plan page shows them.
      realRateLimits: true,
      // Webhooks to a receiver on this machine, retried within milliseconds.
      config: { webhooks: { allowPrivateTargets: true, backoffBaseMs: 5, pollMs: 25, timeoutMs: 2000 } },
    });
    receiver = await startReceiver();
    browser = await openBrowser();
    page = browser.page;
    // A missing element fails its step in seconds, not at mocha's timeout.
    page.setDefaultTimeout(20_000);
    page.on('dialog', (dialog) => void dialog.accept());
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await receiver?.close();
  });

  // The steps are one journey: each starts from the state the steps before it left. A step runs
  // only once every step before it has passed, so one failure does not cascade into the rest,
  // and a step picked alone by `--grep` is skipped with a note instead of failing obscurely.
  let stepsPassed = 0;
  /** The steps in the order they are written (set at the end of this block). */
  let steps: Mocha.Test[] = [];
  beforeEach(function () {
    const test = this.currentTest;
    const step = test ? steps.indexOf(test) : -1;
    if (step === stepsPassed) return;
    console.log(
      `      (skipped: "${test?.title}" follows ${step} earlier steps of the journey and only ${stepsPassed} passed; run them all with --grep 'dashboard in Chromium')`,
    );
    this.skip();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'passed') stepsPassed += 1;
  });

  it('signs up from the login page with the keyboard alone', async () => {
    await page.goto(`${server.url}/dashboard`);
    await page.getByRole('heading', { name: 'Log in to Folio' }).waitFor();
    await screenshot(page, 'login');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { name: 'Create a Folio account' }).waitFor();
    // The page settles first (its requests answered), so no late render takes the focus away
    // from what the keyboard types; the fields are checked before the form is sent.
    await page.waitForLoadState('networkidle');
    await page.getByLabel('Email').focus();
    await page.keyboard.type(email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(password);
    expect(await page.getByLabel('Email').inputValue()).to.equal(email);
    expect(await page.getByLabel('Password').inputValue()).to.equal(password);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    expect(await page.getByText(email).count()).to.equal(1);
    const cookies = await browser.context.cookies();
    const session = cookies.find((c) => c.name === 'folio_session');
    expect(session?.httpOnly).to.equal(true);
    expect(session?.sameSite).to.equal('Lax');
  });

  it('creates a project and a key; the raw key is shown once and copies to the clipboard', async () => {
    await page.getByLabel('Project name').fill('shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('status').filter({ hasText: 'Project shop created.' }).waitFor();
    await screenshot(page, 'projects');
    await page.getByRole('link', { name: 'API keys of shop' }).click();
    await page.getByRole('heading', { name: 'API keys · shop' }).waitFor();
    await page.getByLabel('Name').fill('server');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Key "server" created' });
    await dialog.waitFor();
    rawKey = await dialog.getByLabel('API key').inputValue();
    expect(rawKey).to.match(/^folio_sk_test_[0-9A-Za-z]{40}$/);
    await dialog.getByRole('button', { name: 'Copy' }).click();
    await dialog.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).to.equal(rawKey);
    await screenshot(page, 'key-created');
    await dialog.getByRole('button', { name: 'I have saved it' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const row = page.getByRole('row', { name: /server/ });
    await row.getByText('never').waitFor();
    expect(await row.textContent()).to.include(rawKey.slice(-4));
    expect(await page.content()).to.not.include(rawKey);
  });

  it('shows a document created through the API, with its collection count and last key use', async () => {
    const created = await api('POST', '/products', { name: 'lamp', price: 12, tags: ['home'] });
    expect(created.status).to.equal(201);
    docId = created.body._id;
    await api('POST', '/products', { name: 'pen', price: 2 });
    await page.reload();
    const keyRow = page.getByRole('row', { name: /server/ });
    await keyRow.waitFor();
    // "Last used" now shows a time instead of "never".
    expect(await keyRow.getByText('never').count()).to.equal(0);
    expect(await keyRow.locator('time').count()).to.equal(2);
    await page.getByRole('link', { name: 'Test data' }).click();
    const row = page.getByRole('row', { name: /products/ });
    await row.waitFor();
    expect((await row.textContent())?.replace(/\s+/g, ' ')).to.include('products2');
    await screenshot(page, 'collections');
    await page.getByRole('link', { name: 'products' }).click();
    await page.getByText('Documents 1–2 of 2').waitFor();
    expect(await page.getByRole('link', { name: docId }).count()).to.equal(1);
  });

  it('queries with the API’s filter language and shows the API’s own errors', async () => {
    await page.getByRole('button', { name: 'Add filter' }).click();
    await page.getByLabel('Field').fill('price');
    await page.getByLabel('Operator').selectOption('gte');
    await page.getByLabel('Value').fill('10');
    await page.getByLabel('Sort').fill('-price');
    expect(await page.locator('.api-query').textContent()).to.equal('?filter[price][gte]=10&sort=-price');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Documents 1–1 of 1').waitFor();
    expect(page.url()).to.include('filter%5Bprice%5D%5Bgte%5D=10');
    await page.getByLabel('Field').fill('a..b');
    await page.getByRole('button', { name: 'Apply' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).to.include('invalid_query');
    expect(await alert.textContent()).to.include('HTTP 400');
    expect(await unnamedControls(page)).to.deep.equal([]);
  });

  it('the query form’s controls line up: one top edge and height per line, Remove on the inputs’ line', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/products`);
    await page.getByRole('button', { name: 'Add filter' }).click();
    const box = async (locator: ReturnType<Page['locator']>) => {
      const found = await locator.boundingBox();
      if (!found) throw new Error('no box');
      return found;
    };
    const field = await box(page.getByLabel('Field'));
    const operator = await box(page.getByLabel('Operator'));
    const value = await box(page.getByLabel('Value'));
    const remove = await box(page.getByRole('button', { name: 'Remove filter 1' }));
    for (const other of [operator, value, remove]) {
      expect(Math.abs(other.y - field.y), JSON.stringify(other)).to.be.below(1);
      expect(Math.abs(other.height - field.height), JSON.stringify(other)).to.be.below(1);
    }
    const sort = await box(page.getByLabel('Sort'));
    const perPage = await box(page.getByLabel('Per page'));
    expect(Math.abs(perPage.y - sort.y)).to.be.below(1);
    expect(Math.abs(perPage.height - sort.height)).to.be.below(1);
    // The Sort label sits below the Add filter button, not against it.
    const add = await box(page.getByRole('button', { name: 'Add filter' }));
    const sortLabel = await box(page.locator('label[for="sort"]'));
    expect(sortLabel.y - (add.y + add.height)).to.be.above(8);
    await screenshot(page, 'query-form');
  });

  it('the document table has a column per top-level field: the first five, the rest on demand', async () => {
    const wide = {
      name: 'chair',
      price: 40,
      tags: ['home', 'wood'],
      address: { city: 'Lyon' },
      inStock: true,
      color: 'oak',
      weight: 7.5,
      note: null,
    };
    expect((await api('PUT', '/wide/w1', wide)).status).to.equal(201);
    expect((await api('PUT', '/wide/w2', { name: 'stool', extra: 'only here' })).status).to.equal(201);
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/wide?sort=_id`);
    await page.getByText('Documents 1–2 of 2').waitFor();
    const headers = () => page.locator('table.documents thead th').allTextContents();
    const firstFive = ['_id', 'name', 'price', 'tags', 'address', 'inStock'];
    const managed = ['$version', '$updatedAt'];
    expect(await headers()).to.deep.equal([...firstFive, ...managed]);
    const first = page.getByRole('row', { name: /^w1/ });
    const cells = await first.locator('td').allTextContents();
    expect(cells.slice(0, 5)).to.deep.equal(['chair', '40', '["home","wood"]', '{"city":"Lyon"}', 'true']);
    // A field a document lacks is an empty cell, not a value.
    const second = await page.getByRole('row', { name: /^w2/ }).locator('td').allTextContents();
    expect(second.slice(1, 5).map((c) => c.trim())).to.deep.equal(['absent', 'absent', 'absent', 'absent']);
    const more = page.getByRole('button', { name: 'Show all 9 fields (4 more)' });
    expect(await more.getAttribute('aria-expanded')).to.equal('false');
    await screenshot(page, 'documents');
    await more.click();
    expect(await headers()).to.deep.equal([...firstFive, 'color', 'weight', 'note', 'extra', ...managed]);
    expect((await first.locator('td').allTextContents()).slice(5, 8)).to.deep.equal(['oak', '7.5', 'null']);
    await screenshot(page, 'documents-all-fields');
    await page.getByRole('button', { name: 'Show the first 5 fields only' }).click();
    expect(await headers()).to.have.length(8);
  });

  it('pages through a collection, sorted, with the page size it was given', async () => {
    for (let n = 1; n <= 12; n++) {
      // Within the Free plan's 10 requests per second per key.
      if (n % 6 === 0) await new Promise((resolve) => setTimeout(resolve, 1000));
      await api('PUT', `/pages/p${String(n).padStart(2, '0')}`, { n });
    }
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/pages`);
    await page.getByLabel('Sort').fill('-n');
    await page.getByLabel('Per page').selectOption('10');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText('Documents 1–10 of 12').waitFor();
    expect(
      await page.getByRole('navigation', { name: 'Pages' }).getByText('Previous page').getAttribute('href'),
    ).to.equal(null);
    await page.getByRole('link', { name: 'Next page' }).click();
    await page.getByText('Documents 11–12 of 12').waitFor();
    const ids = await page.locator('table.documents tbody th').allTextContents();
    expect(ids).to.deep.equal(['p02', 'p01']);
    await page.getByRole('link', { name: 'Previous page' }).click();
    await page.getByText('Documents 1–10 of 12').waitFor();
  });

  it('edits the document as JSON; a stale edit is reported, not written', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/products/d/${docId}`);
    const editor = page.getByLabel('Document JSON (user fields)');
    await editor.waitFor();
    expect(JSON.parse(await editor.inputValue())).to.deep.equal({ name: 'lamp', price: 12, tags: ['home'] });
    await editor.fill(JSON.stringify({ name: 'lamp', price: 15, tags: ['home', 'sale'] }));
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: version 2.' }).waitFor();
    const read = await api('GET', `/products/${docId}`);
    expect(read.body).to.include({ price: 15, $version: 2 });
    // Someone else writes version 3; saving the page's version 2 is a 412 shown as such.
    await server.request('PATCH', `/shop/products/${docId}`, {
      key: rawKey,
      body: { note: 'from elsewhere' },
      contentType: 'application/merge-patch+json',
    });
    await editor.fill('{"name":"lamp","price":99}');
    await page.getByRole('button', { name: 'Save' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('version_mismatch').waitFor();
    expect(await alert.textContent()).to.include('Changed in the meantime');
    expect((await api('GET', `/products/${docId}`)).body.price).to.equal(15);
    await editor.fill('{"name": oops}');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').getByText('This is not valid JSON').waitFor();
    await page.reload();
    await editor.waitFor();
    expect(JSON.parse(await editor.inputValue())).to.include({ note: 'from elsewhere' });
  });

  it('on Free the diff is refused with the plan error; after switching to Pro it shows side by side', async () => {
    await page.getByLabel('From version').selectOption('1');
    await page.getByLabel('To version').selectOption('3');
    await page.getByRole('button', { name: 'Compare' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('plan_feature_unavailable').waitFor();
    await alert.getByRole('link', { name: 'See the plans and change yours' }).click();
    await page.getByRole('heading', { name: 'Plan and limits' }).waitFor();
    await page.getByRole('button', { name: 'Switch to Pro' }).click();
    await page.getByRole('status').filter({ hasText: 'You are now on the Pro plan.' }).waitFor();
    // Limits by the README's names, never by their configuration keys (maxIndexes, ...).
    const limitNames = await page.locator('table.plans tbody th').allTextContents();
    expect(limitNames).to.include('Declared indexes per collection');
    expect(limitNames.filter((name) => /[a-z][A-Z]/.test(name))).to.deep.equal([]);
    await screenshot(page, 'plan');
    expect(
      (await server.request('GET', '/api/auth/session', { session: await sessionToken() })).body.account.plan,
    ).to.equal('pro');
    await page.goBack();
    await page.getByLabel('From version').selectOption('1');
    await page.getByLabel('To version').selectOption('3');
    await page.getByRole('button', { name: 'Compare' }).click();
    const changes = page.getByRole('table', { name: 'Changed fields' });
    await changes.waitFor();
    const price = changes.getByRole('row', { name: /^price/ });
    expect((await price.textContent())?.replace(/\s+/g, ' ')).to.include('changed1215');
    expect(await changes.getByRole('row', { name: /^note/ }).textContent()).to.include('added');
    expect(await page.getByRole('figure').count()).to.equal(2);
    await screenshot(page, 'history-diff');
  });

  it('restores version 1 as a new version', async () => {
    await page.getByRole('button', { name: 'Restore version 1' }).click();
    await page.getByRole('status').filter({ hasText: 'Version 1 restored as version 4.' }).waitFor();
    const read = await api('GET', `/products/${docId}`);
    expect(read.body).to.include({ price: 12, $version: 4 });
    expect(read.body).to.not.have.property('note');
    const versions = await api('GET', `/products/${docId}/versions`);
    expect(versions.body.versions[0]).to.include({
      version: 4,
      operation: 'restore',
      apiKeyHint: `dashboard:${email}`,
    });
  });

  it('watches changes arrive live; on the Free plan the view says streams are not in the plan', async () => {
    const plan = async (name: string) =>
      server.request('PATCH', '/api/account', { session: await sessionToken(), body: { plan: name } });
    await plan('free');
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/products`);
    await page.getByRole('link', { name: 'Live changes' }).click();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('alert').getByText('plan_feature_unavailable').waitFor();
    await plan('pro');
    await page.getByLabel('document.deleted').uncheck();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByText('Connected: waiting for changes.').waitFor();
    const created = await api('POST', '/products', { name: 'desk', price: 120 });
    await server.request('PATCH', `/shop/products/${created.body._id}`, {
      key: rawKey,
      body: { price: 99 },
      contentType: 'application/merge-patch+json',
    });
    await api('DELETE', `/products/${created.body._id}`);
    const rows = page.getByRole('table', { name: 'Changes, newest first' }).locator('tbody tr');
    await rows.nth(1).waitFor();
    expect(await rows.nth(1).textContent()).to.include('document.created');
    expect(await rows.nth(0).textContent()).to.include('document.updated');
    expect(await rows.nth(0).textContent()).to.include('"price":99');
    expect(await page.getByRole('link', { name: created.body._id }).count()).to.equal(2);
    await page.getByText('2 received.').waitFor();
    await screenshot(page, 'live');
    await page.getByRole('button', { name: 'Stop' }).click();
    await page.getByText('Stopped.').waitFor();
    // The deleted event was filtered out by the server: still two rows.
    expect(await rows.count()).to.equal(2);
  });

  it('rotates the key: the new secret is shown once, the old one fails at once', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/keys`);
    await page.getByRole('button', { name: /^Rotate key server/ }).click();
    const dialog = page.getByRole('dialog', { name: /rotated/ });
    await dialog.waitFor();
    const rotated = await dialog.getByLabel('API key').inputValue();
    expect(rotated).to.not.equal(rawKey);
    await dialog.getByRole('button', { name: 'I have saved it' }).click();
    const old = await api('GET', `/products/${docId}`);
    expect(old.status).to.equal(401);
    expect((await api('GET', `/products/${docId}`, undefined, rotated)).status).to.equal(200);
    await page.getByRole('row', { name: /revoked/ }).waitFor();
    await screenshot(page, 'keys');
    rawKey = rotated;
  });

  it('edits a key’s rules as JSON: the same secret then reaches only the collections they name', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/keys`);
    const edit = () => page.getByRole('button', { name: /^Edit the rules of key server/ }).click();
    await edit();
    await page.locator('#edit-rules').fill('[{"collections": ["products"], "access": "read"}]');
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByRole('cell', { name: 'products (read)' }).waitFor();
    expect((await api('GET', `/products/${docId}`)).status).to.equal(200);
    expect((await api('GET', '/orders')).status).to.equal(404);
    expect((await api('POST', '/products', { price: 1 })).body.error.code).to.equal('collection_access');
    await edit();
    await page.locator('#edit-rules').fill('');
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByRole('cell', { name: 'every collection' }).first().waitFor();
    expect((await api('GET', '/orders')).status).to.equal(200);
  });

  it('a cross-site form post to a key route rotates nothing', async () => {
    const keys = async () =>
      (await server.request('GET', '/api/keys?project=shop', { session: await sessionToken() })).body.keys;
    const active = (await keys()).find((k: { status: string }) => k.status === 'active');
    const before = (await keys()).length;
    // Another site: `localhost` while the dashboard is on 127.0.0.1.
    const evil = await listen((_req, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form method="post" action="${server.url}/api/keys/${active.id}/rotate"></form>
        <script>document.forms[0].submit()</script>`);
    });
    try {
      const answer = page.waitForResponse((res) => res.url().includes('/rotate'));
      await page.goto(`http://localhost:${(evil.address() as AddressInfo).port}/`);
      expect([401, 403]).to.include((await answer).status());
      expect(await keys()).to.have.length(before);
      expect((await api('GET', `/products/${docId}`)).status).to.equal(200);
    } finally {
      evil.close();
    }
  });

  it('registers a webhook; after failed deliveries it is disabled, and the page re-enables it', async () => {
    receiver.respond = () => 500;
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/products`);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByLabel('Receiver URL').fill(`${receiver.url}/hooks`);
    await page.getByLabel('Description (optional)').fill('stock sync');
    await page.getByRole('button', { name: 'Register webhook' }).click();
    const dialog = page.getByRole('dialog', { name: /Webhook registered/ });
    const secret = await dialog.getByLabel('Signing secret').inputValue();
    expect(secret).to.match(/^whsec_/);
    await dialog.getByRole('button', { name: 'I have saved it' }).click();
    const hooks = await api('GET', '/products/_webhooks');
    const webhookId = hooks.body.webhooks[0].id;
    // Five deliveries fail after their retries: the webhook disables itself.
    for (let i = 0; i < 5; i++) await api('POST', '/products', { name: `item ${i}`, price: i });
    const deadline = Date.now() + 20_000;
    while ((await api('GET', `/products/_webhooks/${webhookId}`)).body.status !== 'disabled') {
      if (Date.now() > deadline) throw new Error('the webhook was not disabled');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await page.getByRole('link', { name: `${receiver.url}/hooks` }).click();
    await page.getByText('Folio disabled this webhook').waitFor();
    const deliveries = page.getByRole('table', { name: 'Recent deliveries, newest first' });
    expect(await deliveries.getByText('failed').count()).to.equal(5);
    expect(await deliveries.getByText('HTTP 500').count()).to.equal(5);
    await screenshot(page, 'webhook');
    receiver.respond = () => 200;
    await page.getByRole('button', { name: 'Re-enable' }).click();
    await page.getByRole('status').filter({ hasText: 'Webhook re-enabled' }).waitFor();
    expect((await api('GET', `/products/_webhooks/${webhookId}`)).body).to.include({
      status: 'active',
      consecutiveFailures: 0,
    });
    // A test event, signed with the secret shown at registration.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').filter({ hasText: 'Test event sent: succeeded' }).waitFor();
    const [test] = await receiver.waitFor(1, (r) => r.body?.event === 'webhook.test');
    expect(verifySignature(test!.rawBody, test!.headers['x-service-signature'], secret)).to.equal(true);
    // A rotated secret signs the next delivery; the old one no longer verifies.
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = page.getByRole('dialog', { name: 'Webhook secret rotated' });
    const next = await rotated.getByLabel('Signing secret').inputValue();
    expect(next)
      .to.match(/^whsec_/)
      .and.not.equal(secret);
    await rotated.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: 'Send test event' }).click();
    const tests = await receiver.waitFor(2, (r) => r.body?.event === 'webhook.test');
    const last = tests[1]!;
    expect(verifySignature(last.rawBody, last.headers['x-service-signature'], next)).to.equal(true);
    expect(verifySignature(last.rawBody, last.headers['x-service-signature'], secret)).to.equal(false);
  });

  it('imports a CSV file with progress, reports a conflict, and exports the collection as CSV', async () => {
    const csv = join(await mkdtemp(join(tmpdir(), 'folio-csv-')), 'people.csv');
    const rows = Array.from(
      { length: 300 },
      (_, i) => `p${String(i).padStart(3, '0')},Person ${i},${20 + (i % 50)},"Paris, FR"`,
    );
    await writeFile(csv, ['_id,name,age,city', ...rows].join('\n'));
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/people`);
    await page.getByRole('link', { name: 'Import and export' }).click();
    await page.getByLabel('File to import').setInputFiles(csv);
    expect(await page.getByLabel('File format').inputValue()).to.equal('csv');
    // Record whether the progress bar showed while the file went up.
    await page.evaluate(`window.__sawProgress = false;
      new MutationObserver(() => { if (document.querySelector('progress')) window.__sawProgress = true; })
        .observe(document.body, { childList: true, subtree: true });`);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Imported 300, skipped 0, 0 with errors, of 300 records.').waitFor();
    expect(await page.evaluate('window.__sawProgress')).to.equal(true);
    // The outcome is said once: in the form, not again in a page notice.
    await page.waitForLoadState('networkidle');
    expect(await page.getByText(/Imported 300|Import finished/).count()).to.equal(1);
    await screenshot(page, 'transfer');
    const stored = await api('GET', '/people/p007');
    expect(stored.body).to.include({ name: 'Person 7', age: 27, city: 'Paris, FR', $version: 1 });
    // The same file again: onConflict=fail refuses the whole import, and says so.
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('conflict', { exact: true }).waitFor();
    expect(await alert.textContent()).to.include('HTTP 409');
    // Export the people aged 21 as CSV.
    await page.getByLabel('Filter and sort (optional)').fill('filter[age]=21&sort=_id');
    await page.getByLabel('Download as').selectOption('csv');
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download' }).click();
    const file = await download;
    expect(file.suggestedFilename()).to.match(/^people-.*\.csv$/);
    const text = await readFile((await file.path()) as string, 'utf8');
    const lines = text.trim().split(/\r?\n/);
    expect(lines[0]?.startsWith('_id,name,age,city')).to.equal(true);
    expect(lines.slice(1).map((line) => line.split(',')[0])).to.deep.equal([
      'p001',
      'p051',
      'p101',
      'p151',
      'p201',
      'p251',
    ]);
    expect(lines[1]).to.include('"Paris, FR"');
    await page
      .getByRole('status')
      .filter({ hasText: /Downloaded people-.*: 6 documents/ })
      .waitFor();
  });

  it('a CSV over the plan’s import size or document count is refused pointing at the command line', async () => {
    await server.request('PATCH', '/api/account', { session: await sessionToken(), body: { plan: 'free' } });
    const dir = await mkdtemp(join(tmpdir(), 'folio-big-csv-'));
    // 20,000 rows of about 290 bytes: over the Free plan's 5 MiB.
    const filler = 'x'.repeat(260);
    const big = join(dir, 'big.csv');
    const bigRows = Array.from({ length: 20_000 }, (_, i) => `b${i},Person ${i},${filler}`);
    await writeFile(big, ['_id,name,bio', ...bigRows].join('\n'));
    await page.goto(`${server.url}/dashboard/#/p/shop/test/c/crowd/transfer`);
    // A reload reads the account again (its plan changed behind the page's back).
    await page.reload();
    await page.getByRole('heading', { name: /^Import and export/ }).waitFor();
    await page.waitForLoadState('networkidle');
    const imports: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/_import')) imports.push(request.url());
    });
    await page.getByLabel('File to import').setInputFiles(big);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const alert = page.getByRole('alert');
    await alert.getByText('payload_too_large').waitFor();
    expect(await alert.textContent()).to.match(
      /big\.csv is [0-9.]+ MiB; the free plan imports at most 5 MiB/,
    );
    const hint = page.getByRole('note', { name: 'Import a large file with the command line' });
    expect(await hint.textContent()).to.include('node bin/folio.js import big.csv -p shop -c crowd');
    expect(imports, 'nothing is uploaded').to.deep.equal([]);
    await screenshot(page, 'import-too-large');
    // Under the size but over the plan's 1,000 documents: Folio's own refusal, the same pointer.
    const many = join(dir, 'many.csv');
    await writeFile(many, ['_id,name', ...Array.from({ length: 2000 }, (_, i) => `m${i},n${i}`)].join('\n'));
    await page.getByLabel('File to import').setInputFiles(many);
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await alert.getByText('plan_limit_exceeded').waitFor();
    expect(await alert.textContent()).to.include('1000 documents per import');
    expect(await hint.textContent()).to.include('node bin/folio.js import many.csv -p shop -c crowd');
    expect((await api('GET', '/crowd?count=true')).body.count).to.equal(0);
  });

  it('an unknown project’s pages say so and offer no form', async () => {
    for (const hash of [
      '#/p/nope/keys',
      '#/p/nope/settings',
      '#/p/nope/test',
      '#/p/nope/test/c/things',
      '#/p/nope/test/c/things/transfer',
      '#/p/nope/live/c/things/webhooks',
    ]) {
      await page.goto(`${server.url}/dashboard/${hash}`);
      await page.getByRole('heading', { name: 'Project not found' }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(await page.locator('main form, main input, main select, main textarea').count(), hash).to.equal(
        0,
      );
      expect(await page.getByRole('alert').textContent(), hash).to.include(
        'You have no project named "nope"',
      );
    }
    await screenshot(page, 'unknown-project');
    await page.getByRole('link', { name: 'Go to your projects' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
  });

  it('sets the project’s allowed browser origins', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/settings`);
    await page.getByLabel('Only the origins listed below, for every key').check();
    await page.getByLabel('Allowed origins, one per line').fill('https://app.example\nnot an origin');
    await page.getByRole('button', { name: 'Save allowed origins' }).click();
    await page.getByRole('alert').getByText('invalid_body').waitFor();
    await page.getByLabel('Allowed origins, one per line').fill('https://app.example\nhttp://localhost:5173');
    await page.getByRole('button', { name: 'Save allowed origins' }).click();
    await page.getByRole('status').filter({ hasText: 'Allowed origins saved.' }).waitFor();
    const projects = await server.request('GET', '/api/projects', { session: await sessionToken() });
    expect(projects.body.projects[0].allowedOrigins).to.deep.equal([
      'https://app.example',
      'http://localhost:5173',
    ]);
  });

  it('switches the project’s automatic indexes off, and back to the server’s default', async () => {
    await page.goto(`${server.url}/dashboard/#/p/shop/settings`);
    const setting = async () =>
      (await server.request('GET', '/api/projects', { session: await sessionToken() })).body.projects[0]
        .autoIndexes;
    expect(await setting()).to.equal(null);
    await page.getByLabel('Off: only the indexes declared on each collection').check();
    await page.getByRole('button', { name: 'Save automatic indexes' }).click();
    await page.getByRole('status').filter({ hasText: 'Automatic indexes saved.' }).waitFor();
    expect(await setting()).to.equal(false);
    await page.getByLabel('The server’s default').check();
    await page.getByRole('button', { name: 'Save automatic indexes' }).click();
    await page.getByRole('status').filter({ hasText: 'Automatic indexes saved.' }).last().waitFor();
    await eventually(async () => expect(await setting()).to.equal(null));
  });

  it('every main page names its controls; logging out ends the session', async () => {
    for (const hash of [
      '#/',
      '#/p/shop/keys',
      '#/p/shop/test',
      '#/p/shop/settings',
      '#/plan',
      '#/p/shop/test/c/products/webhooks',
      '#/p/shop/test/c/products/transfer',
      '#/p/shop/test/c/products/live',
    ]) {
      await page.goto(`${server.url}/dashboard/${hash}`);
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await unnamedControls(page), hash).to.deep.equal([]);
    }
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You are logged out.').waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Log in to Folio' }).waitFor();
    expect((await browser.context.cookies()).find((c) => c.name === 'folio_session')).to.equal(undefined);
  });

  steps = [...this.tests];

  /** A session token for API checks from the test (the browser's own cookie is HttpOnly). */
  async function sessionToken(): Promise<string> {
    const res = await server.request('POST', '/api/auth/login', { body: { email, password } });
    return res.body.token;
  }
});

function listen(handler: Parameters<typeof createServer>[1]): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer(handler as never);
    server.listen(0, 'localhost', () => resolve(server));
  });
}
