/**
 * A bulk request on the embedded store: operations on different documents share a group's
 * transaction (the next one starts once the previous one has made its commit), while one on a
 * document an earlier operation still writes waits for it; one sync, the last operation's or a
 * barrier's. Results, events and the documents are what running them one by one gives, in
 * request order.
 */
import { expect } from 'chai';
import { BulkService } from '../../src/services/bulk.js';
import { DocumentService } from '../../src/services/documents.js';
import type { EmbeddedStore } from '../../src/store/embedded/index.js';
import { ChangeReader } from '../store/fixtures.js';
import { tenantScope } from '../support/scope.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The chained operations below, and what running them one by one gives. */
const CHAINED = [
  { method: 'PUT', id: 'a', body: { v: 1 } },
  { method: 'POST', body: { _id: 'b', v: 1 } },
  { method: 'PATCH', id: 'a', body: { v: 2 } },
  { method: 'PUT', id: 'c', body: { v: 1 } },
  { method: 'PATCH', id: 'b', body: { v: 2 } },
  { method: 'POST', id: 'a', body: {} },
  { method: 'DELETE', id: 'a' },
  { method: 'PATCH', id: 'zz', body: { v: 1 } },
];
const CHAINED_RESULTS = [
  [201, 'a'],
  [201, 'b'],
  [200, 'a'],
  [201, 'c'],
  [200, 'b'],
  [409, 'a'],
  [204, 'a'],
  [404, 'zz'],
];
const CHAINED_EVENTS = [
  ['created', 'a'],
  ['created', 'b'],
  ['updated', 'a'],
  ['created', 'c'],
  ['updated', 'b'],
  ['deleted', 'a'],
];
const CHAINED_DOCS = [
  ['b', 2, 2],
  ['c', 1, 1],
];

/** `n` PUTs creating d100... with `{v: i}`. */
function distinct(n: number) {
  return Array.from({ length: n }, (_, i) => ({ method: 'PUT', id: `d${100 + i}`, body: { v: i } }));
}

function suite(title: string, body: (bulk: Bulk) => void) {
  describe(`bulk: ${title} [embedded]`, function () {
    this.timeout(60_000);
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ config: { plans: { free: { maxBulkOperations: 100 } } } });
    });
    after(async () => {
      await server?.close();
    });
    body((collection, operations) => run(server, collection, operations));
  });
}

type Bulk = (collection: string, operations: unknown[]) => ReturnType<typeof run>;

async function run(server: TestServer, collection: string, operations: unknown[]) {
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

function expectDistinct(out: Awaited<ReturnType<typeof run>>, operations: Array<{ id: string }>) {
  expect(out.status).to.equal(207);
  expect(out.results).to.deep.equal(operations.map((o) => [201, o.id]));
  expect(out.events).to.deep.equal(operations.map((o) => ['created', o.id]));
  expect(out.docs).to.deep.equal(operations.map((o, i) => [o.id, i, 1]));
}

suite('group commit', (bulk) => {
  it('50 operations on 50 documents: one group, synced by the last operation’s durable commit', async () => {
    const operations = distinct(50);
    const out = await bulk('distinct', operations);
    expectDistinct(out, operations);
    expect([out.groups, out.durable]).to.deep.equal([1, 1]);
  });

  it('an operation on a document still being written waits for it; the rest keep request order', async () => {
    const out = await bulk('chained', CHAINED);
    expect(out.results).to.deep.equal(CHAINED_RESULTS);
    expect(out.events).to.deep.equal(CHAINED_EVENTS);
    expect(out.docs).to.deep.equal(CHAINED_DOCS);
    // [PUT a, POST b] | [PATCH a, PUT c, PATCH b] | [POST a: refused] | [DELETE a] | the sync
    // (the last operation, PATCH zz, made no commit of its own to sync).
    expect([out.groups, out.durable]).to.deep.equal([5, 1]);
  });

  it('operations that all fail write nothing and commit nothing', async () => {
    const out = await bulk('failing', [
      { method: 'PATCH', id: 'nope', body: { v: 1 } },
      { method: 'DELETE', id: 'nope' },
    ]);
    expect(out.results).to.deep.equal([
      [404, 'nope'],
      [404, 'nope'],
    ]);
    expect([out.groups, out.durable]).to.deep.equal([0, 0]);
  });
});

type Documents = EmbeddedStore['documents'];

/**
 * `run` with the server's bulk service over the real store, `afterGet` called after each of its
 * reads by id; the service is the server's own again after.
 */
async function withBulkReads<T>(
  server: TestServer,
  afterGet: (id: string) => Promise<void>,
  run: () => Promise<T>,
): Promise<T> {
  const services = server.running.services;
  const store = services.store as EmbeddedStore;
  const documents = new Proxy(store.documents, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === 'get')
        return async (...args: Parameters<Documents['get']>) => {
          const read = await target.get(...args);
          await afterGet(args[2]);
          return read;
        };
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const wrapped = new Proxy(store, {
    get: (target, name) => (name === 'documents' ? documents : Reflect.get(target, name, target)),
  });
  const original = services.bulk;
  services.bulk = new BulkService(
    new DocumentService(wrapped, services.config, { durable: false, schemas: services.schemas }),
    wrapped,
  );
  try {
    return await run();
  } finally {
    services.bulk = original;
  }
}

describe('bulk: a race with another writer [embedded]', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
  });

  it('a write landing between an operation’s read and its commit: the operation reads again, and no update is lost', async () => {
    const tenant = await server.tenant({ plan: 'free' });
    const services = server.running.services;
    const at = (path: string) => `${server.url}/${tenant.project}/raced${path}`;
    const send = (method: string, path: string, body?: unknown) =>
      fetch(at(path), {
        method,
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect((await send('PUT', '/r', { base: 1 })).status).to.equal(201);
    // The real store, except that its first read of `r` lets another writer in right after it:
    // the operation computes its write from version 1 while the document is already at 2.
    let interposed = false;
    const interpose = async (id: string) => {
      if (id !== 'r' || interposed) return;
      interposed = true;
      const key = await services.apiKeys.authenticate(tenant.key);
      const put = await services.documents.replace(key, 'raced', 'r', { base: 1, other: 'kept' });
      expect(put.doc.$version).to.equal(2);
    };
    const res = await withBulkReads(server, interpose, () =>
      send('POST', '/_bulk', {
        operations: [
          { method: 'PATCH', id: 'r', body: { patched: true } },
          { method: 'PUT', id: 's', body: { v: 1 } },
        ],
      }),
    );
    expect(res.status).to.equal(207);
    const body = (await res.json()) as { results: Array<{ status: number }> };
    expect(body.results.map((r) => r.status)).to.deep.equal([200, 201]);
    expect(interposed).to.equal(true);
    // The interposed write and the patch both stand: version 3 holds both; s was written once.
    const doc = (await (await send('GET', '/r')).json()) as Record<string, unknown>;
    expect(doc).to.include({ base: 1, other: 'kept', patched: true, $version: 3 });
    const s = (await (await send('GET', '/s')).json()) as Record<string, unknown>;
    expect(s).to.include({ v: 1, $version: 1 });
  });
});
