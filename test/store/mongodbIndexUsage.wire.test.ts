/**
 * Automatic-index usage shared by every instance on MongoDB: the update pipeline's windows
 * (evaluated by mingo), the repository through the real driver against a scripted server that
 * applies it, and two automatic indexers ("instances") sharing those counts: the threshold is
 * met by their queries together, and one instance that sees no queries does not drop an index
 * the other uses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { find, updateOne } from 'mingo';
import type { PipelineStage } from 'mingo/updater';
import { type Document, Long, MongoClient } from 'mongodb';
import { AutoIndexer, isFlushDue, isUnused } from '../../src/services/autoIndexes.js';
import { EmbeddedStore } from '../../src/store/embedded/index.js';
import {
  MongoIndexUsage,
  USAGE_TTL_MS,
  usageId,
  usageTotal,
  usageUpdatePipeline,
} from '../../src/store/mongodb/indexes/indexUsage.js';
import type { DataScope, IndexRepository, Store } from '../../src/store/port.js';
import { startWireServer, type WireServer } from '../support/mongoWire.js';

const scope: DataScope = { projectId: 'prj_usage', env: 'test' };
/** The scripted server's clock (`$$NOW`). */
let serverNow = () => new Date();

/** The pipeline with the server's `$$NOW` replaced by `now` (mingo has no server clock). */
function at(value: unknown, now: Date): unknown {
  if (value === '$$NOW') return now;
  if (Array.isArray(value)) return value.map((v) => at(v, now));
  if (value && typeof value === 'object' && !(value instanceof Date)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, at(v, now)]));
  }
  return value;
}

function apply(docs: Document[], id: string, pipeline: Document[], now: Date): Document {
  if (!docs.some((d) => d._id === id)) docs.push({ _id: id });
  updateOne(docs, { _id: id }, at(pipeline, now) as PipelineStage[]);
  return docs.find((d) => d._id === id)!;
}

describe('MongoDB automatic-index usage: the shared counts', () => {
  const t0 = 1_700_000_000_000;

  it('starts a window at the first queries, adds within it, starts again past it (server time)', () => {
    const docs: Document[] = [];
    expect(apply(docs, 'f', usageUpdatePipeline(2, 1000), new Date(t0))).to.deep.include({ count: 2 });
    expect(apply(docs, 'f', usageUpdatePipeline(3, 1000), new Date(t0 + 1000))).to.deep.include({ count: 5 });
    const renewed = apply(docs, 'f', usageUpdatePipeline(1, 1000), new Date(t0 + 1001));
    expect(renewed).to.deep.include({ count: 1 });
    expect((renewed.windowStart as Date).getTime()).to.equal(t0 + 1001);
    expect((renewed.lastUsed as Date).getTime()).to.equal(t0 + 1001);
    expect((renewed.expiresAt as Date).getTime()).to.equal(t0 + 1001 + USAGE_TTL_MS);
  });

  it('reads a stale window as 0 queries, and an unknown field as never used', () => {
    const entry = { scope, collection: 'c', field: 'f', queries: 0 };
    const doc = { count: 7, windowStart: new Date(t0), lastUsed: new Date(t0 + 5) };
    expect(usageTotal(entry, doc, 1000, t0 + 1000)).to.include({ queries: 7, lastUsedMs: t0 + 5 });
    expect(usageTotal(entry, doc, 1000, t0 + 1001)).to.include({ queries: 0, lastUsedMs: t0 + 5 });
    expect(usageTotal(entry, null, 1000, t0)).to.include({ queries: 0, lastUsedMs: 0 });
    expect(isUnused(t0, t0 + 300, 300)).to.equal(false);
    expect(isUnused(t0, t0 + 301, 300)).to.equal(true);
  });

  it('adds queries at once when they make the last known total reach the threshold', () => {
    expect(isFlushDue(0, 2, 3)).to.equal(false);
    expect(isFlushDue(0, 3, 3)).to.equal(true);
    expect(isFlushDue(2, 1, 3)).to.equal(true);
    expect(isFlushDue(1, 1, 3)).to.equal(false);
  });

  it('keeps fields, collections and scopes apart', () => {
    const ids = new Set([
      usageId(scope, 'c', 'f'),
      usageId(scope, 'c', 'g'),
      usageId(scope, 'd', 'f'),
      usageId({ ...scope, env: 'live' }, 'c', 'f'),
      usageId(scope, 'c\u0000f', ''),
    ]);
    expect(ids.size).to.equal(5);
  });
});

describe('MongoDB automatic-index usage through the real driver (scripted server)', function () {
  this.timeout(20_000);
  let server: WireServer;
  let client: MongoClient;
  const usageDocs: Document[] = [];
  let dataDir: string;
  let embedded: EmbeddedStore;

  before(async () => {
    server = await startWireServer((command, name) => {
      if (name === 'update') {
        for (const update of command.updates as Document[]) {
          apply(usageDocs, update.q._id as string, update.u as Document[], serverNow());
        }
        return { ok: 1, n: (command.updates as unknown[]).length, nModified: 0 };
      }
      if (name === 'find') {
        const rows = find(usageDocs, command.filter as Document).all();
        return { cursor: { id: Long.ZERO, ns: `folio_system.${command.find}`, firstBatch: rows }, ok: 1 };
      }
      return undefined;
    });
    client = new MongoClient(server.uri);
    dataDir = mkdtempSync(join(tmpdir(), 'folio-usage-'));
    embedded = new EmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await embedded.init();
    const writes = Array.from({ length: 3 }, (_, i) => ({
      kind: 'put' as const,
      expectedVersion: 0,
      document: {
        _id: `d${i}`,
        color: `c${i % 2}`,
        $version: 1,
        $createdAt: '2026-01-01T00:00:00.000Z',
        $updatedAt: '2026-01-01T00:00:00.000Z',
      },
      operation: 'create' as const,
      apiKeyHint: 'k',
      keepVersions: 10,
    }));
    await embedded.documents.commit(scope, 'items', writes as never);
  });

  after(async () => {
    await client.close();
    await server.close();
    await embedded.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('adds each instance’s queries and answers the totals', async () => {
    const usage = new MongoIndexUsage(client.db('folio_system'));
    const entry = { scope, collection: 'notes', field: 'title', queries: 2 };
    expect((await usage.record([entry], 60_000))[0]).to.include({ queries: 2 });
    const [total, unknown] = await usage.record(
      [
        { ...entry, queries: 3 },
        { ...entry, field: 'never', queries: 0 },
      ],
      60_000,
    );
    expect(total).to.include({ queries: 5 });
    expect(total!.lastUsedMs).to.be.above(0);
    // A read (0 queries) writes nothing.
    expect(unknown).to.include({ queries: 0, lastUsedMs: 0 });
    expect(usageDocs.some((d) => String(d._id).endsWith('never'))).to.equal(false);
  });

  /** The embedded store, with its index repository's usage kept in the shared MongoDB counts. */
  function instance(usage: MongoIndexUsage): Store {
    const indexes = new Proxy(embedded.indexes, {
      get(target, property) {
        if (property === 'recordUsage') return usage.record.bind(usage);
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as IndexRepository;
    return new Proxy(embedded, {
      get(target, property) {
        if (property === 'indexes') return indexes;
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as unknown as Store;
  }

  it('two instances reach the threshold together, and one without queries keeps an index the other uses', async () => {
    const policy = {
      enabled: true,
      minDocuments: 1,
      minQueries: 4,
      // Short, so that a's later queries alone never reach the threshold again (no rebuild
      // could hide a drop).
      windowMs: 1_500,
      unusedAfterMs: 1_500,
      maxPerCollection: 1,
    };
    let now = Date.now();
    const clock = () => now;
    serverNow = () => new Date(now);
    const usage = new MongoIndexUsage(client.db('folio_system'));
    const a = new AutoIndexer(instance(usage), policy, clock);
    const b = new AutoIndexer(instance(usage), policy, clock);
    const names = async () => (await embedded.indexes.list(scope, 'items')).map((i) => i.name);
    const settle = async () => {
      await a.settled();
      await b.settled();
    };
    // Two queries each: 4 together, where each alone is below the threshold.
    for (let i = 0; i < 2; i++) {
      a.observe(scope, 'items', ['color'], 10);
      b.observe(scope, 'items', ['color'], 10);
    }
    await settle();
    expect(await names()).to.deep.equal([]);
    // The next observation on each, a second later, flushes the counts; the total reaches 4.
    now += 1_000;
    a.observe(scope, 'items', [], 10);
    b.observe(scope, 'items', [], 10);
    await settle();
    await settle();
    expect(await names()).to.deep.equal(['auto_color_1']);

    // b built it. Only a keeps querying the field; b sees no query for longer than
    // unusedAfterMs, but the shared counts say a uses it, so b keeps it.
    for (let step = 0; step < 4; step++) {
      now += 1_000;
      a.observe(scope, 'items', ['color'], 10);
      await settle();
      b.observe(scope, 'items', [], 10);
      await settle();
    }
    expect(await names()).to.deep.equal(['auto_color_1']);
    // Once nobody uses it, it goes.
    for (let step = 0; step < 3; step++) {
      now += 1_000;
      a.observe(scope, 'items', [], 10);
      b.observe(scope, 'items', [], 10);
      await settle();
    }
    expect(await names()).to.deep.equal([]);
  });

  it('one instance builds at exactly minQueries queries, without waiting for the next second', async () => {
    const policy = {
      enabled: true,
      minDocuments: 1,
      minQueries: 3,
      windowMs: 60_000,
      unusedAfterMs: 60_000,
      maxPerCollection: 1,
    };
    const now = Date.now() + 100_000;
    serverNow = () => new Date(now);
    const solo = new AutoIndexer(instance(new MongoIndexUsage(client.db('folio_system'))), policy, () => now);
    const names = async () => (await embedded.indexes.list(scope, 'solo')).map((i) => i.name);
    await embedded.documents.commit(scope, 'solo', [
      {
        kind: 'put',
        expectedVersion: 0,
        document: {
          _id: 's1',
          size: 1,
          $version: 1,
          $createdAt: '2026-01-01T00:00:00.000Z',
          $updatedAt: '2026-01-01T00:00:00.000Z',
        },
        operation: 'create',
        apiKeyHint: 'k',
        keepVersions: 10,
      },
    ] as never);
    for (let i = 0; i < 2; i++) solo.observe(scope, 'solo', ['size'], 10);
    await solo.settled();
    expect(await names()).to.deep.equal([]);
    solo.observe(scope, 'solo', ['size'], 10);
    await solo.settled();
    expect(await names()).to.deep.equal(['auto_size_1']);
  });
});
