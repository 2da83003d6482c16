/**
 * The dashboard's trash view, in a real Chromium: a deleted document is listed with who deleted
 * it, its history can be shown, it can be restored, and another erased for good.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserSession, chromiumAvailable, openBrowser } from '../support/browser.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

(chromiumAvailable() ? describe : describe.skip)('dashboard in Chromium: trash view', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: BrowserSession;
  let page: Page;
  let tenant: Tenant;
  const call = (method: string, path: string, body?: unknown) =>
    server.request(method, `/${tenant.project}${path}`, {
      key: tenant.key,
      ...(body === undefined ? {} : { body }),
    });

  before(async () => {
    server = await startTestServer();
    tenant = await server.tenant();
    browser = await openBrowser();
    page = browser.page;
    page.setDefaultTimeout(20_000);
    page.on('dialog', (dialog) => void dialog.accept());
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('lists, shows, restores and erases deleted documents', async () => {
    for (const id of ['keep-me', 'forget-me']) {
      await call('PUT', `/notes/${id}`, { title: id });
      await call('PUT', `/notes/${id}`, { title: `${id} v2` });
      await call('DELETE', `/notes/${id}`);
    }
    await page.goto(`${server.url}/dashboard/`);
    await page.getByLabel('Email').fill(tenant.email);
    await page.getByLabel('Password').fill('correct horse battery');
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await page.goto(`${server.url}/dashboard/#/p/${tenant.project}/test/c/notes/trash`);
    await page.getByRole('heading', { name: 'notes: trash' }).waitFor();
    const list = page.getByRole('list', { name: 'Deleted documents, newest first' });
    await list.getByText('forget-me', { exact: true }).waitFor();
    expect(await list.locator(':scope > li').count()).to.equal(2);

    const keep = list.locator(':scope > li').filter({ hasText: 'keep-me v2' });
    await keep.getByRole('button', { name: 'Show last version and history' }).click();
    await keep.getByRole('list', { name: 'History, newest first' }).getByText('v2 update').waitFor();
    await keep.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('status').filter({ hasText: 'Restored keep-me as version 3.' }).waitFor();
    expect((await call('GET', '/notes/keep-me')).body).to.include({ title: 'keep-me v2', $version: 3 });

    const forget = list.locator(':scope > li').filter({ hasText: 'forget-me' });
    await forget.getByRole('button', { name: 'Erase for good' }).click();
    await page.getByRole('status').filter({ hasText: 'Erased forget-me.' }).waitFor();
    await page.getByText('The trash is empty.').waitFor();
    expect((await call('GET', '/notes/_trash/forget-me')).status).to.equal(404);
  });
});
