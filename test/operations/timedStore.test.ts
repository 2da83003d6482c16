/**
 * The timed store (src/operations/timedStore.ts) over a real embedded store: a repository
 * method that returns a promise is timed under its outcome, one that returns anything else is
 * not, and everything else (getters over private fields, the store's own methods) reads through.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import { FolioMetrics } from '../../src/operations/metrics.js';
import { timedStore } from '../../src/operations/timedStore.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { type DataScope, DuplicateError, type Store } from '../../src/store/port.js';
import { firstVersion, putWrite } from '../store/fixtures.js';

const scope: DataScope = { projectId: 'prj_timed', env: 'live' };

/** The timed operation's observation count under `outcome` (0 when it has no series). */
function timedCount(metrics: FolioMetrics, operation: string, outcome: 'ok' | 'error'): number {
  for (const series of metrics.storeDuration.allSeries())
    if (series.labels.operation === operation && series.labels.outcome === outcome) return series.count;
  return 0;
}

describe('timedStore: storage calls timed by operation and outcome', () => {
  let dataDir = '';
  let store: EmbeddedStore;
  let metrics: FolioMetrics;
  let timed: Store;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-timed-'));
    store = createEmbeddedStore({ dataDir, eventRetentionMs: 3_600_000 });
    metrics = new FolioMetrics();
    timed = timedStore(store, metrics);
    // The store's own method, bound to it: init sets private fields only the store holds.
    await timed.init();
  });

  afterEach(async () => {
    await timed.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('times each call that returns a promise, once, under ok', async () => {
    const document = firstVersion({ n: 1 });
    await timed.documents.commit(scope, 'things', [putWrite(document)]);
    for (let i = 0; i < 3; i++) await timed.documents.get(scope, 'things', document._id);
    expect(timedCount(metrics, 'documents.commit', 'ok')).to.equal(1);
    expect(timedCount(metrics, 'documents.get', 'ok')).to.equal(3);
    expect(timedCount(metrics, 'documents.get', 'error')).to.equal(0);
    // What the wrapper returns is what the store returns.
    expect((await timed.documents.get(scope, 'things', document._id))?.n).to.equal(1);
  });

  it('times a rejected call under error, and passes the error on unchanged', async () => {
    const account = {
      id: newId('acc'),
      email: `${newId('acc').toLowerCase()}@example.com`,
      passwordHash: 'x',
      plan: 'free' as const,
      createdAt: isoNow(),
    };
    await timed.accounts.createAccount(account);
    let thrown: unknown = null;
    try {
      await timed.accounts.createAccount({ ...account, id: newId('acc') });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).to.be.instanceOf(DuplicateError);
    expect(timedCount(metrics, 'accounts.createAccount', 'ok')).to.equal(1);
    expect(timedCount(metrics, 'accounts.createAccount', 'error')).to.equal(1);
  });

  it('writes a property through to the store, and refuses one the store does not have', () => {
    // A plain field of the store, read and written through its wrapper.
    const wrapped = timed as unknown as { options: unknown };
    const plain = store as unknown as { options: unknown };
    const options = plain.options;
    expect(wrapped.options).to.equal(options);
    const other = {};
    wrapped.options = other;
    try {
      expect(plain.options).to.equal(other);
    } finally {
      wrapped.options = options;
    }
    expect(plain.options).to.equal(options);
    // The store's own field, through the store's wrapper.
    expect(Object.getOwnPropertyDescriptor(timed, 'kind')?.get).to.be.a('function');
    // A property neither has: refused, not kept on the wrapper where the store never sees it.
    expect(() => {
      (timed.documents as unknown as Record<string, unknown>).extra = 1;
    }).to.throw(TypeError);
    expect(() => {
      (timed as unknown as Record<string, unknown>).extra = 1;
    }).to.throw(TypeError);
  });

  it('leaves untouched what is not a timed repository’s promise', async () => {
    // A getter of the store over its private fields reads through.
    expect(timed.kind).to.equal('embedded');
    expect(timed.changes).to.equal(store.changes);
    // A timed repository is wrapped once, not on every read.
    expect(timed.documents).not.to.equal(store.documents);
    expect(timed.documents).to.equal(timed.documents);
    // Nothing timed made a series.
    expect([...metrics.storeDuration.allSeries()]).to.have.length(0);
    await timed.ping();
    // A scan returns an iterable, not a promise: read whole, untimed.
    await timed.documents.commit(scope, 'things', [putWrite(firstVersion({ n: 2 }))]);
    const scanned: unknown[] = [];
    for await (const document of timed.documents.scan(scope, 'things', {
      filter: {},
      sort: [['_id', 1]],
      skip: 0,
      limit: 0,
    }))
      scanned.push(document);
    expect(scanned).to.have.length(1);
    expect([...metrics.storeDuration.allSeries()].map((series) => series.labels.operation)).to.deep.equal([
      'documents.commit',
    ]);
  });
});
