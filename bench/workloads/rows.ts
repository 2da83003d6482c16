/**
 * The rows every system in the peer bench holds, so each answers over the same data: the
 * document of the GET/POST/PATCH workloads, and the 100,000-row collection of the list and
 * count workloads (500 categories of 200 rows each, prices spread by a fixed stride).
 */
export const BODY = {
  title: 'bench document',
  n: 1,
  price: 12.5,
  tags: ['alpha', 'beta'],
  address: { city: 'Paris' },
};

export const BIG_DOCS = Number(process.env.PEERS_BIG_DOCS ?? 100_000);
export const CATEGORIES = 500;
/** The list workload's page: filter on category, sort on price, this many rows. */
export const PAGE = 20;

export interface BigRow {
  category: string;
  price: number;
  sku: string;
  n: number;
}

export function bigRow(i: number): BigRow {
  return {
    category: `cat-${(i * 7919) % CATEGORIES}`,
    price: (i * 104_729) % 100_000,
    sku: `sku-${i}`,
    n: i,
  };
}

/** Rows `start` .. `start + count - 1` as NDJSON. */
export function bigNdjson(start: number, count: number): string {
  let out = '';
  for (let i = start; i < start + count; i++) out += `${JSON.stringify(bigRow(i))}\n`;
  return out;
}

/** Cycles the categories in a fixed order, so every system is asked the same sequence. */
export function categoryCycle(): () => string {
  let k = 0;
  return () => `cat-${(k++ * 37) % CATEGORIES}`;
}

/**
 * The documents of the import and export workloads (bench/transfer.ts), which the raw
 * better-sqlite3 baseline imports too, so both store the same bytes: text with quotes and a
 * comma, an array, a nested object, a boolean.
 */
export function transferDoc(i: number) {
  return {
    sku: `sku-${i}`,
    n: i,
    price: Math.round(((i * 7919) % 100_000) / 10) / 10,
    name: `Product ${i}, "special" edition`,
    tags: ['a', `t${i % 10}`],
    address: { city: `city-${i % 200}`, zip: String(10000 + (i % 90000)) },
    active: i % 2 === 0,
  };
}

/** transferDoc rows `start` .. `start + count - 1` as NDJSON. */
export function transferNdjson(start: number, count: number): string {
  let out = '';
  for (let i = start; i < start + count; i++) out += `${JSON.stringify(transferDoc(i))}\n`;
  return out;
}
