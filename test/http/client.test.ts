/**
 * The typed client against a real server: every operation of the document, and the errors each
 * documents (test/support/sweep.ts), with operator filters, both patch types, `select`, count and
 * explain; the suite's contract check validates each answer against the OpenAPI document.
 */
import { expect } from 'chai';
import { createFolioClient, folioQuerySerializer, type ListQuery } from '../../client/index.js';
import type { TestServer } from '../support/server.js';
import { startSweptServer, sweepApi } from '../support/sweep.js';

describe('typed client', () => {
  let server: TestServer;
  // biome-ignore lint/suspicious/noExplicitAny: the document is read by key
  let document: any;

  before(async () => {
    server = await startSweptServer();
    document = (await server.request('GET', '/openapi.json')).body;
  });
  after(() => server.close());

  it('writes filters in Folio’s own syntax, operators included', () => {
    expect(
      folioQuerySerializer({ filter: { a: 'x y', n: { gte: 1, lt: 5 }, ok: true }, limit: 10, sort: '-n' }),
    ).to.equal('filter[a]=x%20y&filter[n][gte]=1&filter[n][lt]=5&filter[ok]=true&limit=10&sort=-n');
    expect(folioQuerySerializer({ filter: { tags: { in: ['a', 'b,c'] } } })).to.equal(
      'filter[tags][in]=a%2Cb%2Cc',
    );
  });

  it('types `in` as a list, as documented, and the server filters by it (a compile-time check too)', async () => {
    const tenant = await server.tenant({ plan: 'pro' });
    const folio = createFolioClient(server.url, tenant.key);
    const path = { ns: tenant.project, collection: 'people' };
    for (const name of ['A', 'B', 'C']) {
      const created = await folio.POST('/{ns}/{collection}', { params: { path }, body: { name } });
      expect(created.response.status).to.equal(201);
    }
    // `npx tsc --noEmit` fails here if the generated types take no array for `in`.
    const query: ListQuery = { filter: { name: { in: ['A', 'B'] } }, sort: 'name' };
    const { data } = await folio.GET('/{ns}/{collection}', { params: { path, query } });
    expect(data?.data.map((doc) => doc.name)).to.deep.equal(['A', 'B']);
    // @ts-expect-error an operator the server does not know is not a filter
    const unknownOperator: ListQuery = { filter: { name: { near: 'A' } } };
    expect(unknownOperator).to.be.an('object');
  });

  it('calls every operation of the document and the errors it documents, each answering as typed', async () => {
    const steps = await sweepApi(server.url);
    const called = new Set(steps.map((s) => s.operation.split(' ')[0]));
    const operations: string[] = [];
    for (const item of Object.values<Record<string, { operationId: string }>>(document.paths)) {
      for (const op of Object.values(item)) operations.push(op.operationId);
    }
    // The session mirror repeats the data routes: one of its operations stands for them all.
    const uncovered = operations.filter((id) => !called.has(id) && !id.endsWith('BySession'));
    expect(uncovered.filter((id) => !['dashboardFolderFile'].includes(id))).to.deep.equal([]);
    // Every header Folio sent is documented (HTTP's own framing and caching headers aside).
    const framing = new Set([
      'content-type',
      'content-length',
      'date',
      'connection',
      'keep-alive',
      'transfer-encoding',
      'vary',
      'accept-ranges',
      'last-modified',
    ]);
    const text = JSON.stringify(document).toLowerCase();
    const undocumented = new Set<string>();
    for (const step of steps) {
      for (const name of step.headers.keys()) {
        if (!framing.has(name) && !text.includes(`"${name}"`) && !text.includes(`\`${name}\``))
          undocumented.add(name);
      }
    }
    expect([...undocumented]).to.deep.equal([]);
  });
});
