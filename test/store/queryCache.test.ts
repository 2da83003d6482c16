/**
 * The embedded store's cache of list pages and counts (src/store/embedded/queryCache.ts): its
 * bounds at their edges, its keys, and, through the store, that no count or page ever answers
 * what a write has changed: the same writes and queries against a twin store without the cache
 * give the same answers, whatever the order of writes, conflicts, deletes and queries.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { countKey, pageKey, QueryAnswerCache, sizeOf } from '../../src/store/embedded/queryCache.js';
import type {
  DataScope,
  DocumentWrite,
  FindQuery,
  FolioDocument,
  StoredFilter,
} from '../../src/store/port.js';
import { firstVersion, nextVersion, putWrite } from './fixtures.js';

/** A count's key of `bytes` bytes exactly (sizeOf). */
function keyOf(bytes: number, tag: string): string {
  const key = `${tag}:`.padEnd(bytes - sizeOf('', 0), 'k');
  expect(sizeOf(key, 0)).to.equal(bytes);
  return key;
}

describe('query cache: bounds and keys', () => {
  it('keeps answers up to its budget exactly, and past it drops the oldest collection’s oldest first', () => {
    const cache = new QueryAnswerCache(8 * 256);
    for (const tag of ['a1', 'a2', 'a3', 'a4']) cache.set('s', 'a', keyOf(256, tag), 1);
    for (const tag of ['b1', 'b2', 'b3', 'b4']) cache.set('s', 'b', keyOf(256, tag), 2);
    expect(cache.bytes).to.equal(8 * 256);
    // 200 bytes over: collection `a` is the older, so its oldest answer goes, and only it.
    cache.set('s', 'b', keyOf(200, 'b5'), 3);
    expect(cache.bytes).to.equal(8 * 256 - 256 + 200);
    expect(cache.get('s', 'a', keyOf(256, 'a1'))).to.equal(undefined);
    for (const tag of ['a2', 'a3', 'a4']) expect(cache.get('s', 'a', keyOf(256, tag))).to.equal(1);
    for (const tag of ['b1', 'b2', 'b3', 'b4']) expect(cache.get('s', 'b', keyOf(256, tag))).to.equal(2);
    expect(cache.get('s', 'b', keyOf(200, 'b5'))).to.equal(3);
  });

  it('a hit moves its collection to the end only from the older half of the order', () => {
    const cache = new QueryAnswerCache(8 * 256);
    const fill = (c: string) => {
      for (const tag of ['x', 'y']) cache.set('s', c, keyOf(256, c + tag), 1);
    };
    for (const c of ['a', 'b', 'c', 'd']) fill(c);
    // `c` has 1 collection after it of 4: it stays. `b` has 2 of 4 (half, exactly): it moves.
    expect(cache.get('s', 'c', keyOf(256, 'cx'))).to.equal(1);
    expect(cache.get('s', 'b', keyOf(256, 'bx'))).to.equal(1);
    // Two more collections push out the two oldest: a, then c (not b, which moved).
    fill('e');
    fill('f');
    const kept = ['a', 'b', 'c', 'd'].filter((c) => cache.get('s', c, keyOf(256, `${c}y`)) !== undefined);
    expect(kept).to.deep.equal(['b', 'd']);
  });

  it('never keeps an answer larger than an eighth of its budget (an eighth exactly is kept)', () => {
    const cache = new QueryAnswerCache(8 * 256);
    cache.set('s', 'c', keyOf(256, 'fits'), 1);
    cache.set('s', 'c', keyOf(257, 'over'), 1);
    expect(cache.get('s', 'c', keyOf(256, 'fits'))).to.equal(1);
    expect(cache.get('s', 'c', keyOf(257, 'over'))).to.equal(undefined);
    expect(cache.bytes).to.equal(256);
  });

  it('measures a page by its texts', () => {
    const page = ['{"a":1}', '{"b":22}'];
    expect(sizeOf('k', page)).to.equal(sizeOf('k', 0) + page[0]!.length + page[1]!.length + 2 * 16);
  });

  it('keeps nothing with a budget of 0', () => {
    const cache = new QueryAnswerCache(0);
    cache.set('s', 'c', 'k', 1);
    expect(cache.get('s', 'c', 'k')).to.equal(undefined);
    expect(cache.bytes).to.equal(0);
  });

  it('a write drops its collection’s answers and bytes, and only those', () => {
    const cache = new QueryAnswerCache(4096);
    cache.set('s', 'a', 'k1', 1);
    cache.set('s', 'a', 'k2', ['{}']);
    cache.set('s', 'b', 'k1', 2);
    cache.set('t', 'a', 'k1', 3);
    const bBytes = sizeOf('k1', 2) + sizeOf('k1', 3);
    cache.written('s', 'a');
    cache.written('s', 'a');
    cache.written('s', 'absent');
    expect(cache.get('s', 'a', 'k1')).to.equal(undefined);
    expect(cache.get('s', 'a', 'k2')).to.equal(undefined);
    expect(cache.get('s', 'b', 'k1')).to.equal(2);
    expect(cache.get('t', 'a', 'k1')).to.equal(3);
    expect(cache.bytes).to.equal(bBytes);
    expect({ hits: cache.hits, misses: cache.misses }).to.deep.equal({ hits: 2, misses: 2 });
  });

  it('replaces an answer with the byte count kept exact', () => {
    const cache = new QueryAnswerCache(4096);
    cache.set('s', 'c', 'k', ['{"a":1}']);
    cache.set('s', 'c', 'k', 7);
    expect(cache.get('s', 'c', 'k')).to.equal(7);
    expect(cache.bytes).to.equal(sizeOf('k', 7));
  });

  it('never confuses one scope and collection with another that concatenates the same', () => {
    const cache = new QueryAnswerCache(4096);
    cache.set('ab', 'c', 'k', 1);
    expect(cache.get('a', 'bc', 'k')).to.equal(undefined);
    cache.written('a', 'bc');
    expect(cache.get('ab', 'c', 'k')).to.equal(1);
  });

  it('one tenant asking widely drops its own answers, not those of a tenant within half', () => {
    const cache = new QueryAnswerCache(8 * 256);
    for (const tag of ['l1', 'l2']) cache.set('light', 'a', keyOf(256, tag), 1);
    for (const tag of ['l3', 'l4']) cache.set('light', 'b', keyOf(256, tag), 1);
    // Many collections of the heavy tenant, asked after the light one's.
    for (let i = 0; i < 20; i++) cache.set('heavy', `c${i}`, keyOf(256, `h${i}`), 2);
    for (const [c, tag] of [
      ['a', 'l1'],
      ['a', 'l2'],
      ['b', 'l3'],
      ['b', 'l4'],
    ] as const)
      expect(cache.get('light', c, keyOf(256, tag))).to.equal(1);
    expect([cache.bytesOf('light'), cache.bytesOf('heavy')]).to.deep.equal([4 * 256, 4 * 256]);
    // The heavy tenant's oldest collections went first: its newest four remain.
    const kept = Array.from({ length: 20 }, (_, i) => i).filter(
      (i) => cache.get('heavy', `c${i}`, keyOf(256, `h${i}`)) !== undefined,
    );
    expect(kept).to.deep.equal([16, 17, 18, 19]);
  });

  it('a tenant past an even share gives up its oldest answers down to it, and no further', () => {
    const cache = new QueryAnswerCache(8 * 256);
    for (const tag of ['l1', 'l2', 'l3', 'l4', 'l5']) cache.set('light', 'a', keyOf(256, tag), 1);
    for (let i = 0; i < 20; i++) cache.set('heavy', 'c', keyOf(256, `h${i}`), 2);
    const kept = ['l1', 'l2', 'l3', 'l4', 'l5'].filter(
      (tag) => cache.get('light', 'a', keyOf(256, tag)) === 1,
    );
    expect(kept).to.deep.equal(['l2', 'l3', 'l4', 'l5']);
    expect(cache.bytes).to.equal(8 * 256);
  });

  it('gives different questions different keys, and the same question the same key', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 3 }),
      fc.integer({ min: -2, max: 2 }),
      fc.boolean(),
      fc.constant(null),
    );
    const filter = fc.dictionary(
      fc.constantFrom('a', 'b', 'a.b', '"', ','),
      fc.record({ $in: fc.array(value, { maxLength: 2 }) }),
      { maxKeys: 2 },
    );
    const upTo = fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined });
    fc.assert(
      fc.property(filter, upTo, filter, upTo, (f1, u1, f2, u2) =>
        [
          [f1, u1, f2, u2],
          [f1, u1, f1, u2],
          [f1, u1, f2, u1],
        ].every(([fa, ua, fb, ub]) => {
          const same = JSON.stringify([fa, ua ?? 'none']) === JSON.stringify([fb, ub ?? 'none']);
          return (
            (countKey(fa as typeof f1, ua as typeof u1) === countKey(fb as typeof f1, ub as typeof u1)) ===
            same
          );
        }),
      ),
    );
    const query = fc.record({
      filter,
      sort: fc.array(
        fc.tuple(fc.constantFrom('a', 'a,1', '"', 'b'), fc.constantFrom(1 as const, -1 as const)),
        {
          maxLength: 2,
        },
      ),
      skip: fc.nat(12),
      limit: fc.nat(12),
      after: fc.option(
        fc.record({ keys: fc.array(value, { maxLength: 2 }), id: fc.string({ maxLength: 2 }) }),
        {
          nil: undefined,
        },
      ),
    });
    // Each part of the question alone: a key that left one out would give two questions one key.
    const text = (q: object) => JSON.stringify(q, (_k, v) => (v === undefined ? 'none' : v));
    fc.assert(
      fc.property(
        query,
        query,
        fc.constantFrom('filter', 'sort', 'skip', 'limit', 'after'),
        (q1, q2, part) => {
          const mixed = { ...q1, [part]: q2[part] };
          return (pageKey(mixed) === pageKey(q1)) === (text(mixed) === text(q1));
        },
      ),
    );
    // Edges the generators may miss: a window's numbers run together, a count and a page.
    const base = { filter: {}, sort: [], after: undefined };
    expect(pageKey({ ...base, skip: 1, limit: 12 })).to.not.equal(pageKey({ ...base, skip: 11, limit: 2 }));
    expect(countKey({}, 1)).to.not.equal(countKey({}, undefined));
    expect(countKey({}, undefined)).to.not.equal(pageKey({ ...base, skip: 0, limit: 0 }));
  });
});

describe('query cache: through the embedded store', () => {
  const scope: DataScope = { projectId: 'prj_answers', env: 'test' };
  const dirs: string[] = [];
  let cached: EmbeddedStore;
  let uncached: EmbeddedStore;

  async function open(queryCacheBytes: number): Promise<EmbeddedStore> {
    const dataDir = await mkdtemp(join(tmpdir(), 'folio-answers-'));
    dirs.push(dataDir);
    const store = createEmbeddedStore({ dataDir, queryCacheBytes, eventRetentionMs: 300_000 });
    await store.init();
    return store;
  }

  before(async () => {
    cached = await open(1024 * 1024);
    uncached = await open(0);
  });

  after(async () => {
    await cached.close();
    await uncached.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('answers every count and page as a store without the cache does, across writes, conflicts and deletes', async () => {
    const ids = ['a', 'b', 'c', 'd'];
    const sorts: Array<FindQuery['sort']> = [[], [['n', 1]], [['color', -1]]];
    const filters: StoredFilter[] = [
      {},
      { color: { $in: ['red'] } },
      { n: { $gte: 0 } },
      { color: { $in: ['red', 'blue'] } },
    ];
    const step = fc.oneof(
      fc.record({
        op: fc.constant('put' as const),
        id: fc.constantFrom(...ids),
        color: fc.constantFrom('red', 'blue', 'green'),
        n: fc.integer({ min: -3, max: 3 }),
        stale: fc.boolean(),
      }),
      fc.record({ op: fc.constant('delete' as const), id: fc.constantFrom(...ids), stale: fc.boolean() }),
      fc.record({
        op: fc.constant('many' as const),
        ids: fc.uniqueArray(fc.constantFrom(...ids), { minLength: 1, maxLength: 3 }),
        color: fc.constantFrom('red', 'blue'),
      }),
      fc.record({
        op: fc.constant('count' as const),
        filter: fc.nat(filters.length - 1),
        upTo: fc.boolean(),
      }),
      fc.record({
        op: fc.constant('page' as const),
        filter: fc.nat(filters.length - 1),
        sort: fc.nat(sorts.length - 1),
        limit: fc.integer({ min: 1, max: 3 }),
        skip: fc.nat(2),
        // A cursor page: after a position in the sort (its key per sort path, then the id).
        after: fc.option(
          fc.record({
            n: fc.integer({ min: -3, max: 3 }),
            color: fc.constantFrom('red', 'blue', 'green'),
            id: fc.constantFrom(...ids),
          }),
          { nil: undefined },
        ),
      }),
    );
    let run = 0;
    let reads = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 40 }), async (steps) => {
        const collection = `run${run++}`;
        const current = new Map<string, FolioDocument>();
        const both = async (writes: DocumentWrite[]) => {
          const [one, other] = [
            await cached.documents.commit(scope, collection, writes),
            await uncached.documents.commit(scope, collection, writes),
          ];
          expect(one.ok).to.equal(other.ok);
          return one.ok;
        };
        for (const s of steps) {
          if (s.op === 'put') {
            const existing = current.get(s.id);
            const fields = { color: s.color, n: s.n };
            const doc = existing ? nextVersion(existing, fields) : firstVersion(fields, s.id);
            // A stale writer's document follows a version that is not the current one: refused.
            const write = putWrite(s.stale ? { ...doc, $version: doc.$version + 1 } : doc);
            if (await both([write])) current.set(s.id, doc);
          } else if (s.op === 'delete') {
            const existing = current.get(s.id);
            const expectedVersion = (existing?.$version ?? 1) + (s.stale ? 1 : 0);
            if (await both([{ kind: 'delete', id: s.id, expectedVersion }])) current.delete(s.id);
          } else if (s.op === 'many') {
            const docs = s.ids.map((id) => {
              const existing = current.get(id);
              return existing
                ? nextVersion(existing, { color: s.color, n: 9 })
                : firstVersion({ color: s.color, n: 9 }, id);
            });
            if (await both(docs.map((doc) => putWrite(doc))))
              for (const doc of docs) current.set(doc._id, doc);
          } else if (s.op === 'count') {
            const filter = filters[s.filter]!;
            const upTo = s.upTo ? 2 : undefined;
            const expected = await uncached.documents.count(scope, collection, filter, upTo);
            // Asked twice: the second is the cache's answer, unless the first was too large to keep.
            reads += 1;
            for (const _ of [1, 2])
              expect(await cached.documents.count(scope, collection, filter, upTo)).to.equal(expected);
          } else {
            const query: Omit<FindQuery, 'projection'> = {
              filter: filters[s.filter]!,
              sort: [...sorts[s.sort]!, ['_id', 1]],
              limit: s.limit,
              skip: s.after ? 0 : s.skip,
              after: s.after && {
                keys: [[], [s.after.n], [s.after.color]][s.sort]!,
                id: s.after.id,
              },
            };
            const expected = await uncached.documents.findJson!(scope, collection, query);
            reads += 1;
            for (const _ of [1, 2])
              expect(await cached.documents.findJson!(scope, collection, query)).to.deep.equal(expected);
          }
        }
      }),
      { numRuns: 60 },
    );
    // The property ran with the cache answering: every read step's second ask was a hit.
    expect(cached.documents.answers.hits).to.be.above(0);
    expect(cached.documents.answers.hits).to.be.at.least(reads);
    expect(uncached.documents.answers.hits).to.equal(0);
  });
});
