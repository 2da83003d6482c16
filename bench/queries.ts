/**
 * Query latency on a 100,000-document collection of the embedded store with no declared or
 * automatic index, each query beside a plain `GET /{id}` measured in the same run, over real
 * HTTP, one request after another (the server in this process, seeded through the store port).
 */
import { performance } from 'node:perf_hooks';
import { tenantScope } from '../test/support/scope.js';
import { seedDocuments, startQueryBenchServer } from './seed.js';
import { percentile, QUERY_SAMPLES, rng, sampleSequentially, samplesText, timedGet } from './stats.js';
import { sized } from './workloads/rows.js';

const DOCS = sized(100_000, 5_000);
const WORDS = ['amber', 'birch', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'haven', 'islet', 'juniper'];

const server = await startQueryBenchServer();
try {
  const tenant = await server.tenant({ plan: 'team' });
  const { store } = server.running.services;
  const scope = await tenantScope(server, tenant);

  const random = rng(42);
  const word = () => WORDS[Math.floor(random() * WORDS.length)] as string;
  const category = () => `cat-${Math.floor(random() * 50)}`;
  const seedStart = performance.now();
  const ids = await seedDocuments(store, scope, 'bench', DOCS, (i) => ({
    n: i,
    category: category(),
    price: Math.round(random() * 100_000) / 100,
    name: `${word()} ${word()} ${i}`,
    tags: [WORDS[i % WORDS.length] as string],
    address: { city: `city-${i % 200}` },
  }));
  const seedMs = performance.now() - seedStart;

  const base = `/${tenant.project}/bench`;
  const get = (path: string) => timedGet(`${server.url}${path}`, tenant.key);

  const queries: Array<[string, () => string]> = [
    ['GET /{id}', () => `${base}/${ids[Math.floor(random() * ids.length)]}`],
    ['equality filter', () => `${base}?filter[category]=${category()}&limit=20`],
    [
      'range + sort + limit 20',
      () => `${base}?filter[price][gte]=${Math.floor(random() * 900)}&sort=-$createdAt&limit=20`,
    ],
    ['contains filter', () => `${base}?filter[name][contains]=${word()}&limit=20`],
    ['count', () => `${base}?count=true&filter[category]=${category()}`],
    [
      'sort by $updatedAt, deep page',
      () => `${base}?sort=$updatedAt&offset=${Math.floor(random() * 5000)}&limit=20`,
    ],
  ];

  const rows: Array<{ query: string; p50: number; p99: number; mean: number }> = [];
  for (const [name, path] of queries) {
    for (let i = 0; i < 10; i++) await get(path()); // warm-up
    const samples = await sampleSequentially(() => get(path()), QUERY_SAMPLES);
    rows.push({
      query: name,
      p50: percentile(samples, 50),
      p99: percentile(samples, 99),
      mean: samples.reduce((a, b) => a + b, 0) / samples.length,
    });
  }

  process.stdout.write(
    `${DOCS.toLocaleString('en')} documents, ${samplesText(QUERY_SAMPLES)}; seeded in ${(seedMs / 1000).toFixed(1)} s ` +
      `(${Math.round(DOCS / (seedMs / 1000)).toLocaleString('en')} docs/s through the port).\n\n` +
      '| query | p50 ms | p99 ms | mean ms |\n| --- | ---: | ---: | ---: |\n' +
      rows
        .map((r) => `| ${r.query} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.mean.toFixed(2)} |\n`)
        .join(''),
  );
} finally {
  await server.close();
}
