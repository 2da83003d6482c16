/**
 * The dashboard's trash and schema views, in a real Chromium: a deleted document is listed with
 * who deleted it, its history can be shown, it can be restored, and another erased for good; a
 * schema is set, refuses a write, lists the existing documents that fail it, and is removed.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { type BrowserSession, chromiumAvailable, openBrowser } from '../support/browser.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';

(chromiumAvailable() ? describe : describe.skip)(
  'dashboard in Chromium: trash and schema views',
  function () {
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

    it('sets a schema, lists the documents that fail it, and removes it', async () => {
      await call('PUT', '/books/old', { title: 42 });
      await page.goto(`${server.url}/dashboard/#/p/${tenant.project}/test/c/books/schema`);
      await page.getByRole('heading', { name: 'books: schema' }).waitFor();
      await page.getByText('This collection has no schema').waitFor();
      await page.getByLabel('Mode').selectOption('enforce');
      await page.getByRole('button', { name: 'Save schema' }).click();
      await page.getByRole('status').filter({ hasText: 'Schema of books saved (enforce).' }).waitFor();
      const failing = page.getByRole('list', { name: 'Failing documents' });
      await failing.getByRole('link', { name: 'old' }).waitFor();
      expect(await failing.textContent()).to.contain('must be string');
      expect((await call('POST', '/books', { title: 1 })).status).to.equal(422);

      await page.getByLabel(/JSON Schema/).fill('{ not json');
      await page.getByRole('button', { name: 'Save schema' }).click();
      await page.getByRole('alert').filter({ hasText: 'The schema is not JSON' }).waitFor();

      await page.getByRole('button', { name: 'Remove schema' }).click();
      await page.getByRole('status').filter({ hasText: 'Schema of books removed.' }).waitFor();
      await page.getByText('This collection has no schema').waitFor();
      expect((await call('POST', '/books', { title: 1 })).status).to.equal(201);
    });
  },
);
