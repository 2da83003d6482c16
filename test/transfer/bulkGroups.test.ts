/**
 * A bulk request on the embedded store: operations on different documents share a group's
 * transaction (the next one starts once the previous commit has its place in the order), while
 * one on a document an earlier operation still writes waits for it. Results, events and the
 * documents are what running them one by one gives, in request order.
 */
import { expect } from 'chai';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { ChangeReader } from '../store/fixtures.js';
import { tenantScope } from '../support/scope.js';
import { startTestServer, type TestServer } from '../support/server.js';

describe('bulk: operations grouped into commits [embedded]', function () {
  this.timeout(60_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ config: { plans: { free: { maxBulkOperations: 100 } } } });
  });
  after(async () => {
    await server?.close();
  });

  async function bulk(collection: string, operations: unknown[]) {
    const tenant = await server.tenant({ plan: 'free' });
    const store = server.running.services.store as EmbeddedStore;
    const reader = new ChangeReader(store.changes.watch(await tenantScope(server, tenant), collection));
    try {
      const before = store.documents.commitGroups;
      const res = await fetch(`${server.url}/${tenant.project}/${collection}/_bulk`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ operations }),
      });
      const after = store.documents.commitGroups;
      const body = (await res.json()) as {
        results: Array<{ status: number; _id?: string }>;
        summary: { succeeded: number };
      };
      const events = await reader.take(body.summary.succeeded);
      const list = await fetch(`${server.url}/${tenant.project}/${collection}?sort=_id&limit=50`, {
        headers: { Authorization: `Bearer ${tenant.key}` },
      });
      const docs = ((await list.json()) as { data: Array<Record<string, unknown>> }).data;
      return {
        status: res.status,
        results: body.results.map((r) => [r.status, r._id]),
        events: events.map((e) => [e.type, e.documentId]),
        docs: docs.map((d) => [d._id, d.v, d.$version]),
        groups: after.groups - before.groups,
        durable: after.durable - before.durable,
      };
    } finally {
      reader.sub.close();
    }
  }

  it('50 operations on 50 documents: one group, then the sync', async () => {
    const operations = Array.from({ length: 50 }, (_, i) => ({
      method: 'PUT',
      id: `d${100 + i}`,
      body: { v: i },
    }));
    const out = await bulk('distinct', operations);
    expect(out.status).to.equal(207);
    expect(out.results).to.deep.equal(operations.map((o) => [201, o.id]));
    expect(out.events).to.deep.equal(operations.map((o) => ['created', o.id]));
    expect(out.docs).to.deep.equal(operations.map((o, i) => [o.id, i, 1]));
    expect([out.groups, out.durable]).to.deep.equal([2, 1]);
  });

  it('an operation on a document still being written waits for it; the rest keep request order', async () => {
    const out = await bulk('chained', [
      { method: 'PUT', id: 'a', body: { v: 1 } },
      { method: 'POST', body: { _id: 'b', v: 1 } },
      { method: 'PATCH', id: 'a', body: { v: 2 } },
      { method: 'PUT', id: 'c', body: { v: 1 } },
      { method: 'PATCH', id: 'b', body: { v: 2 } },
      { method: 'POST', id: 'a', body: {} },
      { method: 'DELETE', id: 'a' },
      { method: 'PATCH', id: 'zz', body: { v: 1 } },
    ]);
    expect(out.results).to.deep.equal([
      [201, 'a'],
      [201, 'b'],
      [200, 'a'],
      [201, 'c'],
      [200, 'b'],
      [409, 'a'],
      [204, 'a'],
      [404, 'zz'],
    ]);
    expect(out.events).to.deep.equal([
      ['created', 'a'],
      ['created', 'b'],
      ['updated', 'a'],
      ['created', 'c'],
      ['updated', 'b'],
      ['deleted', 'a'],
    ]);
    expect(out.docs).to.deep.equal([
      ['b', 2, 2],
      ['c', 1, 1],
    ]);
    // [PUT a, POST b] | [PATCH a, PUT c, PATCH b] | [POST a: refused] | [DELETE a] | the sync.
    expect([out.groups, out.durable]).to.deep.equal([5, 1]);
  });
});
