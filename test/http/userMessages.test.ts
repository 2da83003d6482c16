/**
 * Messages a user reads name limits, settings and variables as the README does: the setting
 * that allows private webhook targets, and the plan table's names of plan limits (never the
 * internal keys `bulkOperations`, `importDocuments`).
 */
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { startTestServer } from '../support/server.js';
import type { SuiteContext } from '../support/stores.js';

describe('user-facing messages name settings and limits as the README does', () => {
  const ctx = {} as SuiteContext;
  before(async () => {
    ctx.server = await startTestServer();
    ctx.tenant = await ctx.server.tenant({ plan: 'free' });
  });
  after(async () => {
    await ctx.server.close();
  });
  const free = loadConfig({}).plans.free;

  it('a loopback webhook target is refused naming FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS', async () => {
    for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook']) {
      const res = await ctx.server.request('POST', `/${ctx.tenant.project}/orders/_webhooks`, {
        key: ctx.tenant.key,
        body: { url, events: ['document.created'] },
      });
      expect(res.status, url).to.equal(400);
      expect(res.body.error.message, url).to.include('FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true');
    }
  });

  it('a bulk request over the plan says "operations per bulk request"', async () => {
    const operations = Array.from({ length: free.maxBulkOperations + 1 }, (_, i) => ({
      method: 'PUT',
      id: `m${i}`,
      body: { i },
    }));
    const res = await ctx.server.request('POST', `/${ctx.tenant.project}/bulky/_bulk`, {
      key: ctx.tenant.key,
      body: { operations },
    });
    expect(res.status).to.equal(403);
    expect(res.body.error.message).to.equal(
      `The free plan allows at most ${free.maxBulkOperations} operations per bulk request.`,
    );
  });

  it('a list over the plan says "filters per query" and "documents per page (limit)"', async () => {
    const filters = Array.from({ length: free.maxFilters + 1 }, (_, i) => `filter[f${i}]=1`).join('&');
    const tooMany = await ctx.server.request('GET', `/${ctx.tenant.project}/notes?${filters}`, {
      key: ctx.tenant.key,
    });
    expect(tooMany.status).to.equal(403);
    expect(tooMany.body.error.message).to.equal(
      `The free plan allows at most ${free.maxFilters} filters per query.`,
    );
    const tooLong = await ctx.server.request(
      'GET',
      `/${ctx.tenant.project}/notes?limit=${free.maxPageSize + 1}`,
      { key: ctx.tenant.key },
    );
    expect(tooLong.status).to.equal(403);
    expect(tooLong.body.error.message).to.equal(
      `The free plan allows at most ${free.maxPageSize} documents per page (limit).`,
    );
  });

  it('an import over the plan says "documents per import"', async () => {
    const lines = Array.from({ length: free.maxImportDocuments + 1 }, (_, i) => JSON.stringify({ i }));
    const res = await ctx.server.request('POST', `/${ctx.tenant.project}/many/_import`, {
      key: ctx.tenant.key,
      rawBody: lines.join('\n'),
      contentType: 'application/x-ndjson',
    });
    expect(res.status).to.equal(403);
    expect(res.body.error.message).to.equal(
      `The free plan allows at most ${free.maxImportDocuments} documents per import.`,
    );
    expect(res.body.error.message).to.not.match(/importDocuments|bulkOperations|maxIndexes/);
  });
});
