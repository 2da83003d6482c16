/**
 * The embedded store's answers to list pages and counts (src/store/embedded/query/answerCache.ts):
 * no count or page ever answers what a write has changed: the same writes and queries against a
 * twin store without the cache give the same answers, whatever the order of writes, conflicts,
 * deletes and queries.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import fc from 'fast-check';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { questionText } from '../../src/store/embedded/query/answerCache.js';
import type {
  DataScope,
  DocumentWrite,
  FindQuery,
  FolioDocument,
  StoredFilter,
} from '../../src/store/port.js';
import { firstVersion, nextVersion, putWrite } from './fixtures.js';

describe('query cache: keys', () => {
  it('gives values of different types, and what JSON would lose, different texts', () => {
    const texts = [
      5,
      '5',
      -0,
      0,
      Number.POSITIVE_INFINITY,
      null,
      Number.NaN,
      undefined,
      true,
      'true',
      [5],
      { a: 5 },
    ].map((value) => questionText({ v: value }));
    expect(new Set(texts).size).to.equal(texts.length);
    expect(questionText({ a: [1, 'x'] })).to.equal(questionText({ a: [1, 'x'] }));
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
            // Asked twice: the second is the cache's answer.
            for (const _ of [1, 2])
              expect(await cached.documents.count(scope, collection, filter, upTo)).to.equal(expected);
          } else {
            const query: FindQuery = {
              filter: filters[s.filter]!,
              sort: [...sorts[s.sort]!, ['_id', 1]],
              limit: s.limit,
              skip: s.after ? 0 : s.skip,
              after: s.after && {
                keys: [[], [s.after.n], [s.after.color]][s.sort]!,
                id: s.after.id,
              },
            };
            const expected = JSON.stringify(await uncached.documents.find(scope, collection, query));
            for (const _ of [1, 2])
              expect(JSON.stringify(await cached.documents.find(scope, collection, query))).to.equal(
                expected,
              );
          }
        }
      }),
      { numRuns: 200 },
    );
    // The property ran with the cache answering.
    expect(cached.documents.answers.size).to.be.above(0);
    expect(uncached.documents.answers.size).to.equal(0);
  });
});
