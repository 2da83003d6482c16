/**
 * The rows every system in the bench holds, so each answers over the same data: the document of
 * the GET/POST/PATCH workloads, the 100,000-row collection of the list and count workloads (500
 * categories of 200 rows each, prices spread by a fixed stride), the documents of import, export
 * and bulk; and the sizes of every workload.
 */

/** BENCH_QUICK=1: a smoke run, every workload at a small size, to check the bench end to end. */
export const QUICK = process.env.BENCH_QUICK === '1';
export const sized = (full: number, quick: number): number => (QUICK ? quick : full);

export const BODY = {
  title: 'bench document',
  n: 1,
  price: 12.5,
  tags: ['alpha', 'beta'],
  address: { city: 'Paris' },
};

export const BIG_DOCS = sized(100_000, 5_000);
export const CATEGORIES = 500;
/** The list workload's page: filter on category, sort on price, this many rows. */
export const PAGE = 20;

export const bigRow = (i: number) => ({
  category: `cat-${(i * 7919) % CATEGORIES}`,
  price: (i * 104_729) % 100_000,
  sku: `sku-${i}`,
  n: i,
});

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

/** The one-shot workloads' sizes (bench/transfer.ts: Folio and raw better-sqlite3 in turn). */
export const IMPORT_DOCS = sized(25_000, 2_000);
export const EXPORT_DOCS = sized(250_000, 20_000);
export const BULK_OPS = 100;
/**
 * Bulk requests timed, after the ones that warm a server's code up. Five warm-up requests left
 * Folio's deeper code partly unoptimised for the 20 timed after them: 8.7–8.8 ms and 9.3 ms of
 * CPU a request, against 5.9–6.8 ms and 5.2–6.0 ms after 50 (raw's few lines warm at once).
 */
export const BULK_ROUNDS = sized(100, 10);
export const BULK_WARMUP = sized(50, 5);

export interface BulkOperation {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  id?: string;
  body?: Record<string, unknown>;
}

/**
 * The operations of bulk request `round` (Folio's envelope; raw better-sqlite3 gets the same):
 * 40 PUTs creating new documents, 30 PATCHes of the first 30 of them, 20 POSTs, then 10
 * DELETEs of documents the request created and patched.
 */
export function bulkOperations(round: number): BulkOperation[] {
  return Array.from({ length: BULK_OPS }, (_, i): BulkOperation => {
    const id = `b${round}-${i % 40}`;
    if (i < 40) return { method: 'PUT', id, body: transferDoc(i) };
    if (i < 70) return { method: 'PATCH', id, body: { n: -i } };
    if (i < 90) return { method: 'POST', body: transferDoc(i) };
    return { method: 'DELETE', id };
  });
}

/** transferDoc rows `start` .. `start + count - 1` as NDJSON. */
export function transferNdjson(start: number, count: number): string {
  let out = '';
  for (let i = start; i < start + count; i++) out += `${JSON.stringify(transferDoc(i))}\n`;
  return out;
}

/**
 * transferDoc rows `start` .. `start + count - 1` as CSV, as Folio's CSV import reads them back
 * into the same documents: dotted headers for nested fields, a JSON array in a quoted cell, a
 * quoted JSON string for the zip code (digits that stay text).
 */
export function transferCsv(start: number, count: number): string {
  const rows = ['sku,n,price,name,tags,address.city,address.zip,active'];
  for (let i = start; i < start + count; i++) {
    const d = transferDoc(i);
    rows.push(
      [
        d.sku,
        d.n,
        d.price,
        `"${d.name.replace(/"/g, '""')}"`,
        `"${JSON.stringify(d.tags).replace(/"/g, '""')}"`,
        d.address.city,
        `"""${d.address.zip}"""`,
        d.active,
      ].join(','),
    );
  }
  return `${rows.join('\r\n')}\r\n`;
}

/**
 * A record papaparse read from transferCsv (header row, dynamic typing) as the document Folio's
 * CSV import stores: dotted headers nest, a cell holding JSON text (an array, an object, a
 * quoted string) is that value. The raw better-sqlite3 baseline imports CSV with it.
 */
export function documentOfCsvRecord(record: Record<string, unknown>): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (const [header, cell] of Object.entries(record)) {
    const value = typeof cell === 'string' && /^["[{]/.test(cell) ? (JSON.parse(cell) as unknown) : cell;
    const path = header.split('.');
    let at = doc;
    for (const name of path.slice(0, -1)) {
      at[name] ??= {};
      at = at[name] as Record<string, unknown>;
    }
    at[path.at(-1) as string] = value;
  }
  return doc;
}
