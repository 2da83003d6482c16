/**
 * A bulk request on the embedded store. Up to an import batch (`imports.batchDocuments`
 * operations, `imports.batchBytes` of documents) it is one commit: every operation planned in
 * request order, then all written together, with one sync. Larger, or when that commit is
 * refused as a whole, operations on different documents share a group's transaction (the next
 * one starts once the previous commit has its place in the order), while one on a document an
 * earlier operation still writes waits for it. Either way, results, events and the documents
 * are what running them one by one gives, in request order.
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

/** `n` PUTs creating d100... with `{v: i}`, and their documents' JSON bytes (24-character timestamps). */
function distinct(n: number) {
  const operations = Array.from({ length: n }, (_, i) => ({
    method: 'PUT',
    id: `d${100 + i}`,
    body: { v: i },
  }));
  const stamp = 'x'.repeat(24);
  const bytes = operations.reduce(
    (sum, o) =>
      sum +
      Buffer.byteLength(
        JSON.stringify({ _id: o.id, ...o.body, $createdAt: stamp, $updatedAt: stamp, $version: 1 }),
      ),
    0,
  );
  return { operations, bytes };
}

function suite(
  title: string,
  imports: { batchDocuments?: number; batchBytes?: number },
  body: (bulk: Bulk) => void,
) {
  describe(`bulk: ${title} [embedded]`, function () {
    this.timeout(60_000);
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ config: { imports, plans: { free: { maxBulkOperations: 100 } } } });
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

const FIFTY = distinct(50);

suite('one commit up to an import batch', { batchDocuments: 50, batchBytes: FIFTY.bytes }, (bulk) => {
  it('50 operations on 50 documents, exactly the batch in count and bytes: one durable commit', async () => {
    const out = await bulk('distinct', FIFTY.operations);
    expectDistinct(out, FIFTY.operations);
    expect([out.groups, out.durable]).to.deep.equal([1, 1]);
  });

  it('operations on the same documents, planned in request order: what one by one gives, in one commit', async () => {
    const out = await bulk('chained', CHAINED);
    expect(out.results).to.deep.equal(CHAINED_RESULTS);
    expect(out.events).to.deep.equal(CHAINED_EVENTS);
    expect(out.docs).to.deep.equal(CHAINED_DOCS);
    expect([out.groups, out.durable]).to.deep.equal([1, 1]);
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

suite('one more operation than an import batch', { batchDocuments: 49 }, (bulk) => {
  it('50 operations on 50 documents: one group, then the sync', async () => {
    const out = await bulk('distinct', FIFTY.operations);
    expectDistinct(out, FIFTY.operations);
    expect([out.groups, out.durable]).to.deep.equal([2, 1]);
  });
});

suite('one byte more than an import batch', { batchBytes: FIFTY.bytes - 1 }, (bulk) => {
  it('50 operations on 50 documents: one group, then the sync', async () => {
    const out = await bulk('distinct', FIFTY.operations);
    expectDistinct(out, FIFTY.operations);
    expect([out.groups, out.durable]).to.deep.equal([2, 1]);
  });
});

suite('one by one', { batchDocuments: CHAINED.length - 1 }, (bulk) => {
  it('an operation on a document still being written waits for it; the rest keep request order', async () => {
    const out = await bulk('chained', CHAINED);
    expect(out.results).to.deep.equal(CHAINED_RESULTS);
    expect(out.events).to.deep.equal(CHAINED_EVENTS);
    expect(out.docs).to.deep.equal(CHAINED_DOCS);
    // [PUT a, POST b] | [PATCH a, PUT c, PATCH b] | [POST a: refused] | [DELETE a] | the sync.
    expect([out.groups, out.durable]).to.deep.equal([5, 1]);
  });
});

type Documents = EmbeddedStore['documents'];

/** What runs after each document read of the store under a bulk service (`withBulkReads`). */
interface ReadHooks {
  /** After a read by id, with the id. */
  get?: (id: string) => void | Promise<void>;
  /** After a read of many ids, with the ids; null: the store has no getMany (no fast path). */
  getMany?: ((ids: readonly string[]) => void | Promise<void>) | null;
}

/**
 * `run` with the server's bulk service over the real store, `hooks` called after its document
 * reads; the service is the server's own again after.
 */
async function withBulkReads<T>(server: TestServer, hooks: ReadHooks, run: () => Promise<T>): Promise<T> {
  const services = server.running.services;
  const store = services.store as EmbeddedStore;
  const documents = new Proxy(store.documents, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === 'getMany' && hooks.getMany === null) return undefined;
      if (name === 'get' && hooks.get)
        return async (...args: Parameters<Documents['get']>) => {
          const read = await target.get(...args);
          await hooks.get!(args[2]);
          return read;
        };
      if (name === 'getMany' && hooks.getMany)
        return async (...args: Parameters<Documents['getMany']>) => {
          const read = await target.getMany(...args);
          await hooks.getMany!(args[2]);
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
    services.config,
  );
  try {
    return await run();
  } finally {
    services.bulk = original;
  }
}

describe('bulk: the plan’s reads [embedded]', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
  });

  it('a write landing between the plan and its commit: the planned commit is refused as a whole; the operations run one by one, and no update is lost', async () => {
    const tenant = await server.tenant({ plan: 'free' });
    const services = server.running.services;
    const store = services.store as EmbeddedStore;
    const at = (path: string) => `${server.url}/${tenant.project}/raced${path}`;
    const send = (method: string, path: string, body?: unknown) =>
      fetch(at(path), {
        method,
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect((await send('PUT', '/r', { base: 1 })).status).to.equal(201);
    // The real store, except that its first read of `r` (the plan reads the named documents
    // together) lets another writer in right after it: the bulk plans against version 1 while
    // the document is already at version 2.
    let interposed = false;
    const interpose = async (ids: readonly string[]) => {
      if (!ids.includes('r') || interposed) return;
      interposed = true;
      const key = await services.apiKeys.authenticate(tenant.key);
      const put = await services.documents.replace(key, 'raced', 'r', { base: 1, other: 'kept' });
      expect(put.doc.$version).to.equal(2);
    };
    let readAhead = false;
    const groupsBefore = store.documents.commitGroups.groups;
    const res = await withBulkReads(
      server,
      {
        get: (id) => interpose([id]),
        getMany: (ids) => {
          readAhead ||= !interposed && ids.includes('r');
          return interpose(ids);
        },
      },
      () =>
        send('POST', '/_bulk', {
          operations: [
            { method: 'PATCH', id: 'r', body: { patched: true } },
            { method: 'PUT', id: 's', body: { v: 1 } },
          ],
        }),
    );
    expect(res.status).to.equal(207);
    const body = (await res.json()) as { results: Array<{ status: number; $version?: number }> };
    expect(body.results.map((r) => r.status)).to.deep.equal([200, 201]);
    expect(interposed).to.equal(true);
    expect(readAhead, 'the plan read r ahead').to.equal(true);
    // The interposed write and the patch both stand: version 3 holds both; s was written once.
    const doc = (await (await send('GET', '/r')).json()) as Record<string, unknown>;
    expect(doc).to.include({ base: 1, other: 'kept', patched: true, $version: 3 });
    const s = (await (await send('GET', '/s')).json()) as Record<string, unknown>;
    expect(s).to.include({ v: 1, $version: 1 });
    // The planned commit wrote nothing; the one-by-one run made its own commits after the put's.
    expect(store.documents.commitGroups.groups - groupsBefore).to.be.greaterThan(2);
  });

  /** CHAINED and a POST without an id (a new id the service makes up): results, and the reads by id. */
  async function runCounted(hideGetMany: boolean) {
    const tenant = await server.tenant({ plan: 'free' });
    const reads = { get: [] as string[], getMany: [] as string[][] };
    // Without getMany it is a store lacking the fast path.
    const hooks: ReadHooks = {
      get: (id) => {
        reads.get.push(id);
      },
      getMany: hideGetMany
        ? null
        : (ids) => {
            reads.getMany.push([...ids]);
          },
    };
    const res = await withBulkReads(server, hooks, () =>
      fetch(`${server.url}/${tenant.project}/named/_bulk`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ operations: [...CHAINED, { method: 'POST', body: { v: 9 } }] }),
      }),
    );
    const body = (await res.json()) as { results: Array<{ status: number; _id?: string }> };
    return { results: body.results.map((r) => [r.status, r._id]), reads };
  }

  it('one getMany of the named ids and no read by id, a made-up id included', async () => {
    const { results, reads } = await runCounted(false);
    expect(results.slice(0, -1)).to.deep.equal(CHAINED_RESULTS);
    expect(results.at(-1)![0]).to.equal(201);
    expect(reads.getMany).to.deep.equal([['a', 'b', 'a', 'c', 'b', 'a', 'a', 'zz']]);
    expect(reads.get).to.deep.equal([]);
  });

  it('a store without getMany plans by get, with the same results', async () => {
    const { results, reads } = await runCounted(true);
    expect(results.slice(0, -1)).to.deep.equal(CHAINED_RESULTS);
    expect(results.at(-1)![0]).to.equal(201);
    expect(reads.getMany).to.deep.equal([]);
    // Each id once (then the plan's own state), and the made-up one: a read as before.
    expect(reads.get).to.have.length(5);
    expect(reads.get.slice(0, 4)).to.deep.equal(['a', 'b', 'c', 'zz']);
  });
});
