/**
 * The storage ceiling for bench/peers.ts: bare Koa over better-sqlite3 on the same rows Folio
 * holds (bench/workloads/rows.ts), WAL and `synchronous=FULL` as Folio's default, one statement
 * (or one transaction) per request. No auth, no versions, no change log, no validation: what
 * Node, Koa and SQLite cost alone for each workload.
 *
 * - `GET /items/:id`, `POST /items`, `PATCH /items/:id` (shallow merge in a transaction);
 * - `GET /big?category=&limit=` (sorted by price) and `GET /big/count?category=` over
 *   BIG_DOCS rows with an expression index on (category, price), as Folio gets a declared one;
 * - `POST /bulk` (`{docs: [...]}` in one transaction), `POST /import` (NDJSON, one
 *   transaction), `GET /export` (RAW_EXPORT_DOCS rows as NDJSON, streamed).
 *
 * Env: RAW_DB_DIR (required), RAW_ITEMS (1000), RAW_EXPORT_DOCS (0).
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Router } from '@koa/router';
import Database from 'better-sqlite3';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { serveForBench } from '../listen.js';
import { BIG_DOCS, BODY, bigRow, transferDoc } from './rows.js';

const dir = process.env.RAW_DB_DIR;
if (!dir) throw new Error('RAW_DB_DIR is required');
const ITEMS = Number(process.env.RAW_ITEMS ?? 1000);
const EXPORT_DOCS = Number(process.env.RAW_EXPORT_DOCS ?? 0);

const db = new Database(join(dir, 'raw.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
for (const table of ['items', 'big', 'imported', 'exported'])
  db.exec(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, body TEXT NOT NULL)`);
db.exec(
  "CREATE INDEX big_category_price ON big (json_extract(body, '$.category'), json_extract(body, '$.price'))",
);
const insert = (table: string) => db.prepare(`INSERT INTO ${table} (id, body) VALUES (?, ?)`);
const seed = (table: string, count: number, row: (i: number) => object) =>
  db.transaction(() => {
    const statement = insert(table);
    for (let i = 0; i < count; i++)
      statement.run(String(i + 1), JSON.stringify({ _id: String(i + 1), ...row(i) }));
  })();
seed('items', ITEMS, (i) => ({ ...BODY, n: i }));
seed('big', BIG_DOCS, bigRow);
// The documents Folio's export bench (bench/transfer.ts) exports, so both send the same bytes.
seed('exported', EXPORT_DOCS, transferDoc);

const getItem = db.prepare('SELECT body FROM items WHERE id = ?').pluck();
const insertItem = insert('items');
const updateItem = db.prepare('UPDATE items SET body = ? WHERE id = ?');
const page = db
  .prepare(
    "SELECT body FROM big WHERE json_extract(body, '$.category') = ? ORDER BY json_extract(body, '$.price') LIMIT ?",
  )
  .pluck();
const count = db.prepare("SELECT count(*) FROM big WHERE json_extract(body, '$.category') = ?").pluck();
const exportRows = db.prepare('SELECT body FROM exported ORDER BY id').pluck();
const insertImported = insert('imported');

const patchItem = db.transaction((id: string, patch: Record<string, unknown>): string | null => {
  const body = getItem.get(id) as string | undefined;
  if (body === undefined) return null;
  const merged = JSON.stringify(Object.assign(JSON.parse(body), patch));
  updateItem.run(merged, id);
  return merged;
});
const insertMany = db.transaction((docs: unknown[]) => {
  for (const doc of docs) insertImported.run(randomUUID(), JSON.stringify(doc));
});

const app = new Koa();
const router = new Router();
router.get('/items/:id', (ctx) => {
  const body = getItem.get(ctx.params.id) as string | undefined;
  if (body === undefined) ctx.throw(404);
  ctx.type = 'application/json';
  ctx.body = body;
});
router.post('/items', koaBody(), (ctx) => {
  const id = randomUUID();
  const body = JSON.stringify({ _id: id, ...(ctx.request.body as object) });
  insertItem.run(id, body);
  ctx.status = 201;
  ctx.type = 'application/json';
  ctx.body = body;
});
router.patch('/items/:id', koaBody({ jsonStrict: true, json: true }), (ctx) => {
  const merged = patchItem(ctx.params.id as string, ctx.request.body as Record<string, unknown>);
  if (merged === null) ctx.throw(404);
  ctx.type = 'application/json';
  ctx.body = merged;
});
router.get('/big', (ctx) => {
  const rows = page.all(String(ctx.query.category), Number(ctx.query.limit ?? 20)) as string[];
  ctx.type = 'application/json';
  ctx.body = `[${rows.join(',')}]`;
});
router.get('/big/count', (ctx) => {
  ctx.body = { count: count.get(String(ctx.query.category)) };
});
router.post('/bulk', koaBody({ jsonLimit: '10mb' }), (ctx) => {
  const docs = (ctx.request.body as { docs: unknown[] }).docs;
  insertMany(docs);
  ctx.body = { inserted: docs.length };
});
router.post('/import', koaBody({ textLimit: '200mb', text: true }), (ctx) => {
  const text = String(ctx.request.body);
  const docs = text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as unknown);
  insertMany(docs);
  ctx.body = { imported: docs.length };
});
router.get('/export', (ctx) => {
  const rows = exportRows.iterate() as IterableIterator<string>;
  ctx.type = 'application/x-ndjson';
  ctx.body = Readable.from(
    (function* () {
      let chunk = '';
      for (const row of rows) {
        chunk += `${row}\n`;
        if (chunk.length >= 65_536) {
          yield chunk;
          chunk = '';
        }
      }
      if (chunk) yield chunk;
    })(),
  );
});
app.use(router.routes());
serveForBench(app);
