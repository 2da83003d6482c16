/**
 * Declared indexes on the embedded store (issue "query speed"): on BENCH_DOCS documents (100,000),
 * the same queries before and after `POST /_indexes` on the filtered field — a filtered + sorted
 * page of 20, a count on an indexed equality, a cursor page deep in the collection — plus the
 * build time (writers wait for it) and the cost of each index on sequential POSTs.
 * Then bench/indexIsolation.ts: creates in one collection beside indexes declared in another.
 */
import { performance } from 'node:perf_hooks';
import { tenantScope } from '../test/support/scope.js';
import { runIndexIsolationBench } from './indexIsolation.js';
import { seedDocuments, startQueryBenchServer } from './seed.js';
import { percentile, QUERY_SAMPLES, sampleSequentially, samplesText } from './stats.js';
import { bigRow, categoryCycle, sized } from './workloads/rows.js';

const DOCS = sized(100_000, 5_000);
const POSTS = sized(300, 30);

export async function runIndexBench(): Promise<void> {
  const server = await startQueryBenchServer();
  try {
    const tenant = await server.tenant({ plan: 'team' });
    const { store } = server.running.services;
    const scope = await tenantScope(server, tenant);
    await seedDocuments(store, scope, 'items', DOCS, bigRow);

    const base = `${server.url}/${tenant.project}/items`;
    const headers = { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' };
    const timed = async (url: string, init: RequestInit = {}): Promise<{ ms: number; body: unknown }> => {
      const t0 = performance.now();
      const res = await fetch(url, { headers, ...init });
      const body: unknown = await res.json();
      if (res.status >= 300) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - t0, body };
    };
    let k = 0;
    const category = categoryCycle();
    // Cursors deep in the collection, taken once (offsets up to DOCS - 100).
    const cursors: string[] = [];
    const idCursors: string[] = [];
    for (let i = 0; i < 20; i++) {
      const offset = Math.floor(((i + 1) / 21) * (DOCS - 100));
      const { body } = await timed(`${base}?sort=price&limit=20&offset=${offset}&total=none`);
      cursors.push((body as { meta: { next: string } }).meta.next);
      const byId = await timed(`${base}?limit=20&offset=${offset}&total=none`);
      idCursors.push((byId.body as { meta: { next: string } }).meta.next);
    }
    const queries: Array<[string, () => string]> = [
      [
        'equality + sort price, page 20',
        () => `${base}?filter[category]=${category()}&sort=price&limit=20&total=none`,
      ],
      [
        'equality + sort price (exact total)',
        () => `${base}?filter[category]=${category()}&sort=price&limit=20`,
      ],
      ['count, indexed equality', () => `${base}?count=true&filter[category]=${category()}`],
      [
        'range on price, page 20',
        () =>
          `${base}?filter[price][gte]=${(k++ * 997) % 99_000}&filter[price][lt]=${((k * 997) % 99_000) + 500}&limit=20&total=none`,
      ],
      [
        'cursor page deep (default order)',
        () => `${base}?limit=20&total=none&after=${idCursors[k++ % idCursors.length]}`,
      ],
      [
        'cursor page deep (sort price)',
        () => `${base}?sort=price&limit=20&total=none&after=${cursors[k++ % cursors.length]}`,
      ],
    ];
    const measure = async (): Promise<Map<string, { p50: number; p99: number }>> => {
      const out = new Map<string, { p50: number; p99: number }>();
      for (const [name, url] of queries) {
        for (let i = 0; i < 5; i++) await timed(url());
        const samples = await sampleSequentially(async () => (await timed(url())).ms, QUERY_SAMPLES);
        out.set(name, { p50: percentile(samples, 50), p99: percentile(samples, 99) });
      }
      return out;
    };
    const postMean = async (): Promise<number> => {
      let total = 0;
      for (let i = 0; i < POSTS; i++) {
        total += (
          await timed(base, {
            method: 'POST',
            body: JSON.stringify({ category: `cat-${i % 500}`, price: i, sku: `new-${k++}` }),
          })
        ).ms;
      }
      return total / POSTS;
    };

    // Measured after the queries: right after seeding, the first POSTs also pay for the seed's
    // write-ahead log, which made "no index" look twice as slow as any index.
    await postMean();
    const before = await measure();
    const post0 = await postMean();
    const builds: string[] = [];
    const posts = [post0];
    for (const fields of [[{ path: 'category' }], [{ path: 'price' }], [{ path: 'sku' }]]) {
      const { ms, body } = await timed(`${base}/_indexes`, {
        method: 'POST',
        body: JSON.stringify({ fields }),
      });
      builds.push(`${fields[0]!.path} ${(ms / 1000).toFixed(2)} s (${(body as { state: string }).state})`);
      posts.push(await postMean());
    }
    const after = await measure();

    const cell = (m: { p50: number; p99: number }) => `${m.p50.toFixed(2)} | ${m.p99.toFixed(2)}`;
    process.stdout.write(
      `${DOCS.toLocaleString('en')} documents, ${samplesText(QUERY_SAMPLES)}. Index builds (writers wait): ${builds.join(', ')}.\n\n` +
        '| query | before p50 ms | p99 | after p50 ms | p99 |\n| --- | ---: | ---: | ---: | ---: |\n' +
        queries
          .map(([name]) => `| ${name} | ${cell(before.get(name)!)} | ${cell(after.get(name)!)} |\n`)
          .join('') +
        `\nPOST mean ms with 0, 1, 2, 3 indexes: ${posts.map((p) => p.toFixed(2)).join(', ')} (${POSTS} sequential POSTs each; ` +
        `ratio to none: ${posts.map((p) => (p / posts[0]!).toFixed(2)).join(', ')}).\n`,
    );
  } finally {
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runIndexBench();
  await runIndexIsolationBench();
}
