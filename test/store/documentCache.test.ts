/**
 * The embedded store's cache of documents' API text (src/store/embedded/documentCache.ts): its
 * bounds at their edges, and, through the store, that no read ever answers a text a write has
 * replaced, whatever the order of reads, writes, conflicts and deletes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { DocumentJsonCache, sizeOf } from '../../src/store/embedded/documentCache.js';
import { readBackText } from '../../src/store/embedded/documents.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { scopeKeyOf } from '../../src/store/embedded/scopeKey.js';
import { type DataScope, type FolioDocument, UniqueIndexConflictError } from '../../src/store/port.js';
import { createTempEmbeddedStore, destroyTempEmbeddedStore } from './embeddedFactory.js';
import { firstVersion, nextVersion, putWrite } from './fixtures.js';

/** An entry whose size (sizeOf) is exactly `bytes`; `bytes` − 128 must be even. */
function entryOf(bytes: number, version = 1): { json: string; version: number } {
  const entry = { json: 'x'.repeat((bytes - sizeOf({ json: '', version })) / 2), version };
  expect(sizeOf(entry)).to.equal(bytes);
  return entry;
}

describe('document cache: bounds', () => {
  it('keeps entries up to its budget exactly, and evicts the least recently used past it', () => {
    const cache = new DocumentJsonCache(8 * 256);
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) cache.set('s', 'c', id, entryOf(256));
    expect(cache.bytes).to.equal(8 * 256);
    expect(cache.size).to.equal(8);
    // A read makes `a` the most recent, so `b` is the one to go when the budget is passed by 2.
    expect(cache.get('s', 'c', 'a')).to.not.equal(undefined);
    cache.set('s', 'c', 'i', entryOf(130));
    expect(cache.get('s', 'c', 'b')).to.equal(undefined);
    expect(cache.get('s', 'c', 'a')).to.not.equal(undefined);
    expect(cache.get('s', 'c', 'c')).to.not.equal(undefined);
    expect(cache.bytes).to.equal(8 * 256 - 256 + 130);
  });

  it('a hit moves its entry to the end only from the older half of the order (at half, exactly)', () => {
    const cache = new DocumentJsonCache(8 * 256);
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) cache.set('s', 'c', id, entryOf(256));
    // `e` has 3 entries after it: in the newer half, it stays. `d` has 4 of 8: it moves.
    expect(cache.get('s', 'c', 'e')).to.not.equal(undefined);
    expect(cache.get('s', 'c', 'd')).to.not.equal(undefined);
    // Four more entries push out the four oldest: a, b, c, then e (not d, which moved).
    for (const id of ['w', 'x', 'y', 'z']) cache.set('s', 'c', id, entryOf(256));
    const kept = ['a', 'b', 'c', 'd', 'e', 'f'].filter((id) => cache.get('s', 'c', id) !== undefined);
    expect(kept).to.deep.equal(['d', 'f']);
  });

  it('never keeps an entry larger than an eighth of its budget', () => {
    const cache = new DocumentJsonCache(8 * 256);
    cache.set('s', 'c', 'fits', entryOf(256));
    cache.set('s', 'c', 'too-big', entryOf(258));
    expect(cache.get('s', 'c', 'fits')).to.not.equal(undefined);
    expect(cache.get('s', 'c', 'too-big')).to.equal(undefined);
    expect(cache.bytes).to.equal(256);
  });

  it('keeps nothing with a budget of 0', () => {
    const cache = new DocumentJsonCache(0);
    cache.set('s', 'c', 'a', { json: '{}', version: 1 });
    expect(cache.size).to.equal(0);
  });

  it('replaces and evicts with the byte count kept exact, and counts hits and misses', () => {
    const cache = new DocumentJsonCache(4096);
    cache.set('s', 'c', 'a', entryOf(256));
    cache.set('s', 'c', 'a', entryOf(300, 2));
    expect(cache.bytes).to.equal(300);
    expect(cache.get('s', 'c', 'a')?.version).to.equal(2);
    cache.evict('s', 'c', 'a');
    cache.evict('s', 'c', 'a');
    expect(cache.bytes).to.equal(0);
    expect(cache.get('s', 'c', 'a')).to.equal(undefined);
    expect({ hits: cache.hits, misses: cache.misses }).to.deep.equal({ hits: 1, misses: 1 });
  });

  it('never confuses one scope, collection and id with another that concatenates the same', () => {
    const cache = new DocumentJsonCache(4096);
    cache.set('ab', 'c', 'd', { json: '"ab/c/d"', version: 1 });
    expect(cache.get('a', 'bc', 'd')).to.equal(undefined);
    expect(cache.get('ab', 'cd', '')).to.equal(undefined);
    expect(cache.get('ab', 'c', 'd')?.json).to.equal('"ab/c/d"');
  });
});

describe('document cache: shares between tenants', () => {
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

  it('one tenant reading widely evicts its own documents, not those of a tenant within half', () => {
    const cache = new DocumentJsonCache(8 * 256);
    // Exactly half the budget (an even share of two): all of it stays.
    for (const id of ids('a', 4)) cache.set('light', 'c', id, entryOf(256));
    for (const id of ids('h', 40)) cache.set('heavy', 'c', id, entryOf(256));
    expect(ids('a', 4).filter((id) => cache.get('light', 'c', id) === undefined)).to.deep.equal([]);
    expect(cache.bytesOf('light')).to.equal(4 * 256);
    expect(cache.bytesOf('heavy')).to.equal(4 * 256);
    // The heavy tenant keeps its newest.
    expect(ids('h', 40).filter((id) => cache.get('heavy', 'c', id) !== undefined)).to.deep.equal(
      ids('h', 40).slice(36),
    );
  });

  it('a tenant past an even share gives up its oldest documents down to it, and no further', () => {
    const cache = new DocumentJsonCache(8 * 256);
    for (const id of ids('a', 5)) cache.set('light', 'c', id, entryOf(256));
    for (const id of ids('h', 40)) cache.set('heavy', 'c', id, entryOf(256));
    expect(ids('a', 5).filter((id) => cache.get('light', 'c', id) !== undefined)).to.deep.equal(
      ids('a', 5).slice(1),
    );
    expect(cache.bytesOf('light')).to.equal(4 * 256);
  });

  it('one tenant alone has the whole budget, and gives way to a second down to an even share', () => {
    const cache = new DocumentJsonCache(8 * 256);
    for (const id of ids('a', 8)) cache.set('first', 'c', id, entryOf(256));
    expect(cache.bytesOf('first')).to.equal(8 * 256);
    for (const id of ids('b', 20)) cache.set('second', 'c', id, entryOf(256));
    expect([cache.bytesOf('first'), cache.bytesOf('second')]).to.deep.equal([4 * 256, 4 * 256]);
    // The first tenant's newest four stayed.
    expect(ids('a', 8).filter((id) => cache.get('first', 'c', id) !== undefined)).to.deep.equal(
      ids('a', 8).slice(4),
    );
  });

  it('evicts from a tenant holding at least the average, even after the heaviest shrank by writes', () => {
    /** The tenant the cache would evict from next. */
    class Observed extends DocumentJsonCache {
      next(): string | undefined {
        return this.victim()?.owner;
      }
    }
    const cache = new Observed(16 * 256);
    for (const id of ids('p', 6)) cache.set('p', 'c', id, entryOf(256));
    for (const id of ids('q', 4)) cache.set('q', 'c', id, entryOf(256));
    expect(cache.next()).to.equal('p');
    // Writes to five of p's documents: p holds 1 of 5 entries (the average is 2.5), q holds 4.
    for (const id of ids('p', 5)) cache.evict('p', 'c', id);
    expect(cache.next()).to.equal('q');
    // At the average exactly, a tenant may be the one: p 2, q 2.
    cache.set('p', 'c', 'p9', entryOf(256));
    for (const id of ids('q', 2)) cache.evict('q', 'c', id);
    expect([cache.bytesOf('p'), cache.bytesOf('q')]).to.deep.equal([512, 512]);
    expect(cache.next()).to.be.oneOf(['p', 'q']);
  });

  it('keeps every document of a tenant within an even share, whatever the others do (generated)', () => {
    const budget = 16 * 256;
    const tenants = ['light', 'h1', 'h2'];
    const step = fc.oneof(
      fc.record({
        op: fc.constant('set' as const),
        tenant: fc.constantFrom('h1', 'h2'),
        id: fc.integer({ min: 0, max: 30 }),
        // Even sizes from 130 (an empty text) to an eighth of the budget.
        half: fc.integer({ min: 65, max: budget / 16 }),
      }),
      fc.record({
        op: fc.constant('evict' as const),
        tenant: fc.constantFrom('h1', 'h2'),
        id: fc.integer({ min: 0, max: 30 }),
      }),
      fc.record({
        op: fc.constant('get' as const),
        tenant: fc.constantFrom(...tenants),
        id: fc.integer({ min: 0, max: 30 }),
      }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: Math.floor(budget / tenants.length / 256) }),
        fc.array(step, { maxLength: 200 }),
        (light, steps) => {
          const cache = new DocumentJsonCache(budget);
          for (let i = 0; i < light; i++) cache.set('light', 'c', String(i), entryOf(256));
          for (const s of steps) {
            if (s.op === 'set') cache.set(s.tenant, 'c', String(s.id), entryOf(s.half * 2));
            else if (s.op === 'evict') cache.evict(s.tenant, 'c', String(s.id));
            else cache.get(s.tenant, 'c', String(s.id));
            expect(cache.bytes).to.be.at.most(budget);
          }
          for (let i = 0; i < light; i++) expect(cache.get('light', 'c', String(i))).to.not.equal(undefined);
          expect(cache.bytes).to.equal(tenants.reduce((n, t) => n + cache.bytesOf(t), 0));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('document cache: through the embedded store', () => {
  let store: EmbeddedStore;
  const scope: DataScope = { projectId: 'prj_cache', env: 'test' };

  before(async () => {
    store = await createTempEmbeddedStore();
  });

  after(async () => {
    await destroyTempEmbeddedStore(store);
  });

  it('answers every read by id as the database holds it, across writes, conflicts and deletes', async () => {
    const ids = ['a', 'b', 'c'];
    const step = fc.oneof(
      fc.record({
        op: fc.constant('put' as const),
        id: fc.constantFrom(...ids),
        n: fc.integer(),
        stale: fc.boolean(),
      }),
      fc.record({ op: fc.constant('delete' as const), id: fc.constantFrom(...ids), stale: fc.boolean() }),
      fc.record({ op: fc.constant('read' as const), id: fc.constantFrom(...ids) }),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        const collection = `run${run++}`;
        const current = new Map<string, FolioDocument>();
        for (const s of steps) {
          const existing = current.get(s.id);
          if (s.op === 'put') {
            const doc = existing ? nextVersion(existing, { n: s.n }) : firstVersion({ n: s.n }, s.id);
            // A stale writer's document follows a version that is not the current one: refused.
            const write = putWrite(s.stale ? { ...doc, $version: doc.$version + 1 } : doc);
            const result = await store.documents.commit(scope, collection, [write]);
            expect(result.ok).to.equal(!s.stale);
            if (result.ok) current.set(s.id, doc);
          } else if (s.op === 'delete') {
            const expectedVersion = (existing?.$version ?? 1) + (s.stale ? 1 : 0);
            const result = await store.documents.commit(scope, collection, [
              { kind: 'delete', id: s.id, expectedVersion },
            ]);
            expect(result.ok).to.equal(existing !== undefined && !s.stale);
            if (result.ok) current.delete(s.id);
          }
          // Every step reads every id, so the cache holds each one whenever the next write comes.
          for (const id of ids) {
            const doc = current.get(id);
            const read = await store.documents.getJson(scope, collection, id);
            expect(read).to.deep.equal(doc ? { json: JSON.stringify(doc), version: doc.$version } : null);
          }
        }
      }),
      { numRuns: 60 },
    );
    expect(store.documents.cache.hits).to.be.greaterThan(0);
  });

  /** The text the database holds for `id`, read past the cache. */
  async function fromDatabase(collection: string, id: string) {
    store.documents.cache.evict(scopeKeyOf(scope), collection, id);
    const misses = store.documents.cache.misses;
    const read = await store.documents.getJson(scope, collection, id);
    expect(store.documents.cache.misses).to.equal(misses + 1);
    return read;
  }

  it('keeps what a commit wrote: the next read is a hit, the same text the database gives', async () => {
    const doc = firstVersion({ n: 1, nested: { list: [1, 'two', null] } });
    await store.documents.commit(scope, 'written', [putWrite(doc)]);
    const { hits, misses } = store.documents.cache;
    const read = await store.documents.getJson(scope, 'written', doc._id);
    expect([store.documents.cache.hits, store.documents.cache.misses]).to.deep.equal([hits + 1, misses]);
    expect(read).to.deep.equal({ json: JSON.stringify(doc), version: 1 });
    expect(await fromDatabase('written', doc._id)).to.deep.equal(read);
    // `get` (what PATCH and PUT read) is the same document, from the same text.
    expect(await store.documents.get(scope, 'written', doc._id)).to.deep.equal(doc);
  });

  it('a commit of many documents (an import batch) evicts them and keeps none of their texts', async () => {
    const hot = firstVersion({ n: 0 });
    await store.documents.commit(scope, 'batch', [putWrite(hot)]);
    const hotNext = nextVersion(hot, { n: 1 });
    const batch = [putWrite(hotNext), putWrite(firstVersion({ n: 2 })), putWrite(firstVersion({ n: 3 }))];
    const size = store.documents.cache.size;
    expect((await store.documents.commit(scope, 'batch', batch)).ok).to.equal(true);
    expect(store.documents.cache.size).to.equal(size - 1);
    expect(await fromDatabase('batch', hot._id)).to.deep.equal({ json: JSON.stringify(hotNext), version: 2 });
  });

  it('within one group: the last write of a document wins, a delete leaves nothing, a refused write nothing', async () => {
    const kept = firstVersion({ n: 1 });
    const gone = firstVersion({ n: 1 });
    await store.documents.commit(scope, 'grouped', [putWrite(gone)]);
    const keptNext = nextVersion(kept, { n: 2 });
    // Not awaited one by one: they commit in one group, in this order.
    const results = await Promise.all([
      store.documents.commit(scope, 'grouped', [putWrite(kept)]),
      store.documents.commit(scope, 'grouped', [putWrite(keptNext)]),
      store.documents.commit(scope, 'grouped', [putWrite(nextVersion(gone, { n: 2 }))]),
      store.documents.commit(scope, 'grouped', [{ kind: 'delete', id: gone._id, expectedVersion: 2 }]),
      // Stale: refused, so never cached.
      store.documents.commit(scope, 'grouped', [
        putWrite({ ...firstVersion({ n: 9 }, 'stale'), $version: 2 }),
      ]),
    ]);
    expect(results.map((r) => r.ok)).to.deep.equal([true, true, true, true, false]);
    expect(await store.documents.getJson(scope, 'grouped', kept._id)).to.deep.equal({
      json: JSON.stringify(keptNext),
      version: 2,
    });
    expect(await store.documents.getJson(scope, 'grouped', gone._id)).to.equal(null);
    expect(await store.documents.getJson(scope, 'grouped', 'stale')).to.equal(null);
  });

  it('a write refused by a unique index inside a group leaves no text behind', async () => {
    await store.indexes.create(
      scope,
      'unique',
      { name: 'email_1', fields: [{ path: 'email', order: 1 }], unique: true },
      10,
    );
    const first = firstVersion({ email: 'a@x.io' });
    const second = firstVersion({ email: 'a@x.io' });
    const [a, b] = await Promise.allSettled([
      store.documents.commit(scope, 'unique', [putWrite(first)]),
      store.documents.commit(scope, 'unique', [putWrite(second)]),
    ]);
    expect(a.status).to.equal('fulfilled');
    expect(b.status === 'rejected' && b.reason).to.be.instanceOf(UniqueIndexConflictError);
    expect(await store.documents.getJson(scope, 'unique', second._id)).to.equal(null);
    expect((await store.documents.getJson(scope, 'unique', first._id))?.json).to.equal(JSON.stringify(first));
  });

  it('caches only text in the read-back form (metadata last, in order); other text is read from the database', async () => {
    const doc = firstVersion({ n: 1 });
    expect(readBackText(JSON.stringify(doc), doc)).to.equal(JSON.stringify(doc));
    const { $version, $createdAt, $updatedAt, ...rest } = doc;
    const reordered = { $version, ...rest, $createdAt, $updatedAt } as FolioDocument;
    expect(readBackText(JSON.stringify(reordered), reordered)).to.equal(null);
    await store.documents.commit(scope, 'reordered', [putWrite(reordered)]);
    const misses = store.documents.cache.misses;
    const read = await store.documents.getJson(scope, 'reordered', doc._id);
    expect(store.documents.cache.misses).to.equal(misses + 1);
    expect(read).to.deep.equal({ json: JSON.stringify(doc), version: 1 });
  });

  it('is off with a budget of 0: every read goes to the database', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'folio-nocache-'));
    const uncached = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000, documentCacheBytes: 0 });
    try {
      await uncached.init();
      const doc = firstVersion({ n: 1 });
      await uncached.documents.commit(scope, 'things', [putWrite(doc)]);
      for (let i = 0; i < 3; i++) await uncached.documents.getJson(scope, 'things', doc._id);
      expect(uncached.documents.cache.size).to.equal(0);
      expect(uncached.documents.cache.misses).to.equal(3);
    } finally {
      await uncached.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
