/**
 * `npm run bench:scale`: how Folio's reads hold up as a collection grows (not part of the
 * 10-minute `npm run bench`). For 10,000, 100,000 and 1,000,000 documents (BENCH_SCALE_SIZES),
 * seeded through the store port into one collection with a declared index on
 * (category, price), it measures over real HTTP, one request after another:
 * - GET by id (a random document of the whole collection, so the cache helps no more at 1M);
 * - the indexed page: `filter[category]=…&sort=price&limit=20&total=none`;
 * - the indexed count: `count=true&filter[category]=…`;
 * and streams an NDJSON export of the whole collection while sampling the process's RSS.
 * The target: at 1,000,000 each p99 within 2 × of its 10,000-document p99, and the export's
 * added memory flat (not growing with the collection). Writes docs/performance-scale.md
 * (BENCH_SCALE_WRITE=0 to write nothing). Categories grow with the collection (200 rows each),
 * so a page and a count do the same work at every size, as an index promises.
 */
import { writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { tenantScope } from '../test/support/scope.js';
import { startTestServer } from '../test/support/server.js';
import { machine } from './processes.js';
import { seedDocuments } from './seed.js';
import { percentile, rng, sampleSequentially, timedGet } from './stats.js';

const SIZES = (process.env.BENCH_SCALE_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const SAMPLES = { max: 2000, min: 200, budgetMs: 8000 };
const ROWS_PER_CATEGORY = 200;
const ROOT = fileURLToPath(new URL('../', import.meta.url));

interface SizeResult {
  docs: number;
  seedSeconds: number;
  p99: Record<string, number>;
  p50: Record<string, number>;
  exportSeconds: number;
  exportAddedRssMiB: number;
}

async function measureSize(docs: number): Promise<SizeResult> {
  // No automatic indexes (the declared one is the subject); an export of the whole collection.
  // No query cache: a small collection's few categories would be asked again and answered from
  // memory, a large one's rarely, and the growth measured would be the cache's hit rate.
  const server = await startTestServer({
    contract: false,
    config: {
      plans: { team: { maxExportDocuments: 2_000_000 } },
      autoIndexes: { enabled: false },
      embedded: { queryCacheMb: 0 },
    },
  });
  try {
    const tenant = await server.tenant({ plan: 'team' });
    const { store } = server.running.services;
    const scope = await tenantScope(server, tenant);
    const categories = Math.max(1, Math.floor(docs / ROWS_PER_CATEGORY));
    const seedStarted = performance.now();
    const ids = await seedDocuments(
      store,
      scope,
      'items',
      docs,
      (i) => ({
        category: `cat-${(i * 7919) % categories}`,
        price: (i * 104_729) % 100_000,
        sku: `sku-${i}`,
      }),
      5000,
    );
    const seedSeconds = (performance.now() - seedStarted) / 1000;
    const base = `${server.url}/${tenant.project}/items`;
    const headers = { Authorization: `Bearer ${tenant.key}`, 'Content-Type': 'application/json' };
    const index = await fetch(`${base}/_indexes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ fields: [{ path: 'category' }, { path: 'price' }] }),
    });
    if (index.status !== 201) throw new Error(`declaring the index: ${index.status} ${await index.text()}`);
    const random = rng(12345);
    const timed = (url: string) => timedGet(url, tenant.key);
    const queries: Array<[string, () => string]> = [
      ['GET by id', () => `${base}/${ids[Math.floor(random() * ids.length)]}`],
      [
        'indexed page',
        () =>
          `${base}?filter[category]=cat-${Math.floor(random() * categories)}&sort=price&limit=20&total=none`,
      ],
      ['indexed count', () => `${base}?count=true&filter[category]=cat-${Math.floor(random() * categories)}`],
    ];
    const p99: Record<string, number> = {};
    const p50: Record<string, number> = {};
    for (const [name, url] of queries) {
      for (let i = 0; i < 20; i++) await timed(url());
      const samples = await sampleSequentially(() => timed(url()), SAMPLES);
      p99[name] = percentile(samples, 99);
      p50[name] = percentile(samples, 50);
    }
    // The export streamed and thrown away, the process's RSS sampled every 20 ms.
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sampler = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const exportStarted = performance.now();
    const res = await fetch(`${base}/_export`, { headers: { ...headers, Accept: 'application/x-ndjson' } });
    if (res.status !== 200 || !res.body) throw new Error(`export: ${res.status}`);
    let bytes = 0;
    for await (const chunk of res.body) bytes += (chunk as Uint8Array).byteLength;
    clearInterval(sampler);
    const exportSeconds = (performance.now() - exportStarted) / 1000;
    if (bytes === 0) throw new Error('export: empty');
    return { docs, seedSeconds, p99, p50, exportSeconds, exportAddedRssMiB: (peak - rssBefore) / 2 ** 20 };
  } finally {
    await server.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const results: SizeResult[] = [];
  for (const docs of SIZES) {
    process.stdout.write(`seeding and measuring ${docs.toLocaleString('en')} documents ...\n`);
    const result = await measureSize(docs);
    results.push(result);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
  const queries = ['GET by id', 'indexed page', 'indexed count'];
  const table = [
    `| documents | seed s | ${queries.map((q) => `${q} p50 / p99 ms`).join(' | ')} | export s | export added RSS MiB |`,
    `| ---: | ---: | ${queries.map(() => '---:').join(' | ')} | ---: | ---: |`,
    ...results.map(
      (r) =>
        `| ${r.docs.toLocaleString('en')} | ${r.seedSeconds.toFixed(1)} | ${queries.map((q) => `${r.p50[q]?.toFixed(2)} / ${r.p99[q]?.toFixed(2)}`).join(' | ')} | ${r.exportSeconds.toFixed(1)} | ${r.exportAddedRssMiB.toFixed(0)} |`,
    ),
  ];
  const verdicts = [
    '| target | measured | met |',
    '| --- | ---: | --- |',
    ...queries.map((q) => {
      // The growth of the p99 at the largest size over the smallest.
      const ratio = (results.at(-1)?.p99[q] ?? Number.NaN) / (results[0]?.p99[q] ?? Number.NaN);
      return `| ${q}: p99 at ${SIZES.at(-1)?.toLocaleString('en')} ≤ 2 × its p99 at ${SIZES[0]?.toLocaleString('en')} | ${ratio.toFixed(2)} × | ${ratio <= 2 ? 'yes' : 'no'} |`;
    }),
  ];
  const text = `${table.join('\n')}\n\n${verdicts.join('\n')}\n`;
  process.stdout.write(`\n${text}`);
  if (process.env.BENCH_SCALE_WRITE !== '0') {
    await writeFile(
      `${ROOT}docs/performance-scale.md`,
      `# Performance as a collection grows\n\nWritten by \`npm run bench:scale\` (\`bench/scale.ts\`) on ${new Date().toISOString()}; machine: ${machine()}.\n\nOne collection of each size, seeded through the store port, with a declared index on (category, price) and 200 documents per category at every size (so a page and a count do the same work, as an index promises), the query cache off (\`FOLIO_EMBEDDED_QUERY_CACHE_MB=0\`: every page and count is asked of SQLite). Requests one after another over HTTP, ${SAMPLES.min}–${SAMPLES.max} per row after 20 warm-ups; GET by id picks a random document of the whole collection. The export is the whole collection as NDJSON, streamed and thrown away while the server's RSS (same process) is sampled every 20 ms.\n\n${text}`,
    );
  }
}
