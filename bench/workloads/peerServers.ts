/**
 * The extra servers and data of the peer bench's workloads: the raw better-sqlite3 server, a
 * second json-server over the 100,000-row collection (so its writes on `items` do not rewrite
 * a 100,000-row db.json each time), and Folio's copy of the same rows with a declared index on
 * (category, price), as a user with that query would declare.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, expectStatus, freePort, type Server, startProcess } from '../peers.js';
import { BIG_DOCS, bigNdjson, bigRow } from './rows.js';

/** Rows per Folio import request: the Team plan's import limit. */
const IMPORT_PART = 25_000;

/** raw better-sqlite3 for the throughput rounds (its one-shot figures come from bench/transfer.ts). */
export async function startRawSqlite(dir: string): Promise<Server> {
  const dataDir = join(dir, 'raw');
  await mkdir(dataDir, { recursive: true });
  return startProcess(
    'raw better-sqlite3',
    ['--import', 'tsx', 'bench/workloads/rawSqlite.ts'],
    { RAW_DB_DIR: dataDir },
    join(dir, 'raw.log'),
    /listening on (\S+)/,
  );
}

/** json-server (already installed under `dir/json-server`) over `{big: [...]}`. */
export async function startJsonServerBig(dir: string): Promise<Server> {
  const rows = Array.from({ length: BIG_DOCS }, (_, i) => ({ id: i + 1, ...bigRow(i) }));
  await writeFile(join(dir, 'big.json'), JSON.stringify({ big: rows }));
  const port = await freePort();
  return startProcess(
    'json-server (100,000 rows)',
    [
      join(dir, 'json-server/node_modules/json-server/lib/cli/bin.js'),
      join(dir, 'big.json'),
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
    ],
    {},
    join(dir, 'json-server-big.log'),
    /(http:\/\/127\.0\.0\.1:\d+)/,
  );
}

/** The same rows into Folio's `bench/big` (NDJSON imports), then the index the list uses. */
export async function seedFolioBig(url: string, key: string): Promise<void> {
  for (let start = 0; start < BIG_DOCS; start += IMPORT_PART) {
    const res = await fetch(`${url}/bench/big/_import`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/x-ndjson' },
      body: bigNdjson(start, Math.min(IMPORT_PART, BIG_DOCS - start)),
    });
    if (res.status !== 200) throw new Error(`seeding bench/big: ${res.status} ${await res.text()}`);
  }
  await expectStatus(
    call(`${url}/bench/big/_indexes`, 'POST', { fields: [{ path: 'category' }, { path: 'price' }] }, key),
    201,
  );
}
