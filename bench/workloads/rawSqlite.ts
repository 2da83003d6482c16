/**
 * The storage ceilings: bare Koa over better-sqlite3, WAL and `synchronous=FULL` as Folio's
 * default, one statement (or one transaction) per request. No auth, no validation, no log:
 * what Node, Koa and SQLite cost alone for each workload.
 *
 * - `GET /items/:id`, `POST /items`, `PATCH /items/:id` (shallow merge in a transaction) on a
 *   table of (id, body);
 * - `GET /big?category=&limit=` (sorted by price) and `GET /big/count?category=` over BIG_DOCS
 *   rows with an expression index on (category, price), as Folio gets a declared one;
 * - `GET /export`: RAW_EXPORT_DOCS rows as NDJSON, streamed;
 * - Folio's rows, written as cheaply as raw SQL can (`/rows/...`): `POST /rows/items` and
 *   `PATCH /rows/items/:id` write the document (Folio's table and indexes, the body as JSONB),
 *   copy the version it replaces into the versions table (a create has none) with those past
 *   the Team plan's 100 pruned, and write a change row, in one transaction per request;
 *   `POST /rows/import` (NDJSON, or CSV read by papaparse into the same documents) creates
 *   documents the same way in one transaction, into the collection `?into=` names;
 *   `POST /rows/bulk` takes Folio's bulk envelope and writes each operation's rows as Folio
 *   does (a delete moves the document and its history to the trash), in one transaction.
 *
 * Env: RAW_DB_DIR (required), RAW_ITEMS (1000), RAW_BIG_DOCS (BIG_DOCS), RAW_EXPORT_DOCS (0).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Router } from '@koa/router';
import Database from 'better-sqlite3';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import Papa from 'papaparse';
import { newId } from '../../src/ids.js';
import { BIG_DOCS, BODY, type BulkOperation, bigRow, documentOfCsvRecord, transferDoc } from './rows.js';

const dir = process.env.RAW_DB_DIR;
if (!dir) throw new Error('RAW_DB_DIR is required');
const ITEMS = Number(process.env.RAW_ITEMS ?? 1000);
const EXPORT_DOCS = Number(process.env.RAW_EXPORT_DOCS ?? 0);
const BIG = Number(process.env.RAW_BIG_DOCS ?? BIG_DOCS);

const db = new Database(join(dir, 'raw.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
for (const table of ['items', 'big', 'exported'])
  db.exec(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, body TEXT NOT NULL)`);
db.exec(
  "CREATE INDEX big_category_price ON big (json_extract(body, '$.category'), json_extract(body, '$.price'))",
);
// Folio's tables for `/rows` (layout/schema.ts, changeLog.ts), trimmed of nothing a write touches.
db.exec(`
  CREATE TABLE documents (scope TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
    version INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, body BLOB NOT NULL,
    operation TEXT, api_key_hint TEXT, PRIMARY KEY (scope, collection, id));
  CREATE INDEX documents_created ON documents (scope, collection, created_at, id);
  CREATE INDEX documents_updated ON documents (scope, collection, updated_at, id);
  CREATE INDEX documents_version ON documents (scope, collection, version, id);
  CREATE TABLE versions (scope TEXT NOT NULL, collection TEXT NOT NULL, doc_id TEXT NOT NULL,
    version INTEGER NOT NULL, operation TEXT NOT NULL, timestamp TEXT NOT NULL,
    api_key_hint TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (scope, collection, doc_id, version));
  CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,
    collection TEXT NOT NULL, type TEXT NOT NULL, doc_id TEXT NOT NULL, document TEXT NOT NULL,
    timestamp TEXT NOT NULL);
  CREATE INDEX changes_replay ON changes (scope, collection, seq);
  CREATE INDEX changes_timestamp ON changes (timestamp);
  CREATE INDEX changes_doc ON changes (doc_id);
  CREATE TABLE trash (scope TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
    version INTEGER NOT NULL, deleted_at TEXT NOT NULL, api_key_hint TEXT NOT NULL,
    expires_at TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (scope, collection, id));
  CREATE INDEX trash_newest ON trash (scope, collection, deleted_at, id);
  CREATE INDEX trash_expiry ON trash (expires_at);
  CREATE TABLE trash_versions (scope TEXT NOT NULL, collection TEXT NOT NULL, doc_id TEXT NOT NULL,
    version INTEGER NOT NULL, operation TEXT NOT NULL, timestamp TEXT NOT NULL,
    api_key_hint TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (scope, collection, doc_id, version));
`);
const insert = (table: string) => db.prepare(`INSERT INTO ${table} (id, body) VALUES (?, ?)`);
const seed = (table: string, count: number, row: (i: number) => object) =>
  db.transaction(() => {
    const statement = insert(table);
    for (let i = 0; i < count; i++)
      statement.run(String(i + 1), JSON.stringify({ _id: String(i + 1), ...row(i) }));
  })();
seed('items', ITEMS, (i) => ({ ...BODY, n: i }));
seed('big', BIG, bigRow);
// The documents Folio exports in bench/transfer.ts, so both send the same bytes.
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

const KEPT_VERSIONS = 100;
const SCOPE = 'bench';
interface DocumentRow {
  body: string;
  version: number;
  created_at: string;
}
const rowsGet = db.prepare<[string, string], DocumentRow>(
  "SELECT json(body) AS body, version, created_at FROM documents WHERE scope = 'bench' AND collection = ? AND id = ?",
);
const rowsUpsert = db.prepare(
  'INSERT INTO documents (scope, collection, id, version, created_at, updated_at, operation, api_key_hint, body) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?, jsonb(?)) ON CONFLICT (scope, collection, id) DO UPDATE SET ' +
    'version = excluded.version, updated_at = excluded.updated_at, operation = excluded.operation, ' +
    'api_key_hint = excluded.api_key_hint, body = excluded.body',
);
const HISTORY_COLUMNS = 'scope, collection, doc_id, version, operation, timestamp, api_key_hint, body';
/** The version a write replaces, copied from the document's row into the history. */
const rowsKeepVersion = db.prepare(
  `INSERT INTO versions (${HISTORY_COLUMNS}) SELECT scope, collection, id, version, operation, updated_at, ` +
    'api_key_hint, json(body) FROM documents WHERE scope = ? AND collection = ? AND id = ? AND version = ?',
);
const rowsPrune = db.prepare(
  'DELETE FROM versions WHERE scope = ? AND collection = ? AND doc_id = ? AND version <= ?',
);
const rowsChange = db.prepare(
  'INSERT INTO changes (scope, collection, type, doc_id, document, timestamp) VALUES (?, ?, ?, ?, ?, ?)',
);
/**
 * One write as Folio's rows: the version it replaces copied to the history (older ones pruned),
 * the document, its change. New documents get Folio's time-ordered ids (src/ids.ts), so each
 * insert lands at the end of the tables' keys as Folio's do: random ids put every insert
 * somewhere inside three B-trees, which made this ceiling about a quarter slower than the rows
 * themselves cost.
 */
const writeRows = (
  id: string,
  version: number,
  createdAt: string,
  doc: Record<string, unknown>,
  type: string,
  collection = 'items',
): string => {
  const now = new Date().toISOString();
  const text = JSON.stringify({ ...doc, _id: id, $version: version, $createdAt: createdAt, $updatedAt: now });
  if (version > 1) rowsKeepVersion.run(SCOPE, collection, id, version - 1);
  rowsUpsert.run(SCOPE, collection, id, version, createdAt, now, type, 'folio_sk_...abcd', text);
  if (version > KEPT_VERSIONS) rowsPrune.run(SCOPE, collection, id, version - KEPT_VERSIONS);
  rowsChange.run(SCOPE, collection, type, id, text, now);
  return text;
};
/** Many new documents as Folio's rows, in one transaction (a collection of their own). */
const rowsCreateMany = db.transaction((docs: Array<Record<string, unknown>>, collection: string) => {
  const at = new Date().toISOString();
  for (const doc of docs) writeRows(newId('doc'), 1, at, doc, 'insert', collection);
});
const rowsCreate = db.transaction((doc: Record<string, unknown>) =>
  writeRows(newId('doc'), 1, new Date().toISOString(), doc, 'insert'),
);
/** A shallow merge of `patch` into the document `row` holds, as its next version. */
const patchRows = (id: string, row: DocumentRow, patch: Record<string, unknown>, collection = 'items') => {
  const { $version: _v, $createdAt: _c, $updatedAt: _u, ...doc } = JSON.parse(row.body);
  return writeRows(id, row.version + 1, row.created_at, Object.assign(doc, patch), 'update', collection);
};
const rowsPatch = db.transaction((id: string, patch: Record<string, unknown>): string | null => {
  const row = rowsGet.get('items', id);
  return row === undefined ? null : patchRows(id, row, patch);
});
const historyOf = 'WHERE scope = @scope AND collection = @collection AND doc_id = @id';
const ofDocument = 'WHERE scope = @scope AND collection = @collection AND id = @id';
const TRASH_MS = 30 * 24 * 3600 * 1000;
/** A delete as Folio's rows, in order: the document and its history move to the trash; a change row. */
const trashStatements = [
  `DELETE FROM trash_versions ${historyOf}`,
  `DELETE FROM trash ${ofDocument}`,
  'INSERT INTO trash (scope, collection, id, version, deleted_at, api_key_hint, expires_at, body) ' +
    `SELECT scope, collection, id, version, @now, 'folio_sk_...abcd', @expires, json(body) FROM documents ${ofDocument}`,
  `INSERT INTO trash_versions (${HISTORY_COLUMNS}) SELECT ${HISTORY_COLUMNS} FROM versions ${historyOf}`,
  `INSERT INTO trash_versions (${HISTORY_COLUMNS}) SELECT scope, collection, id, version, operation, updated_at, ` +
    `api_key_hint, json(body) FROM documents ${ofDocument}`,
  `DELETE FROM documents ${ofDocument}`,
  `DELETE FROM versions ${historyOf}`,
].map((sql) => db.prepare(sql));
const trashRows = (id: string, row: DocumentRow, collection: string) => {
  const now = new Date();
  const expires = new Date(now.getTime() + TRASH_MS).toISOString();
  const params = { scope: SCOPE, collection, id, now: now.toISOString(), expires };
  for (const statement of trashStatements) statement.run(params);
  rowsChange.run(SCOPE, collection, 'delete', id, row.body, now.toISOString());
};

interface BulkItem {
  status: number;
  _id: string;
}
const bulkOperations = (ctx: Koa.Context) =>
  (ctx.request.body as unknown as { operations: BulkOperation[] }).operations;

/**
 * The operations as Folio's rows, in order, in one transaction: a create writes its three rows;
 * a replace and a merge read the document first (its version and creation time), as Folio must.
 */
const rowsBulk = db.transaction((operations: BulkOperation[], collection: string) =>
  operations.map((op): BulkItem => {
    const now = new Date().toISOString();
    const id = op.id ?? newId('doc');
    if (op.method === 'POST') {
      writeRows(id, 1, now, op.body ?? {}, 'insert', collection);
      return { status: 201, _id: id };
    }
    const row = rowsGet.get(collection, id);
    if (op.method === 'PUT') {
      writeRows(
        id,
        (row?.version ?? 0) + 1,
        row?.created_at ?? now,
        op.body ?? {},
        row ? 'update' : 'insert',
        collection,
      );
      return { status: row ? 200 : 201, _id: id };
    }
    if (row === undefined) return { status: 404, _id: id };
    if (op.method === 'PATCH') patchRows(id, row, op.body ?? {}, collection);
    else trashRows(id, row, collection);
    return { status: op.method === 'PATCH' ? 200 : 204, _id: id };
  }),
);

db.transaction(() => {
  const at = new Date().toISOString();
  for (let i = 0; i < ITEMS; i++) writeRows(String(i + 1), 1, at, { ...BODY, n: i }, 'insert');
})();

const patchItem = db.transaction((id: string, patch: Record<string, unknown>): string | null => {
  const body = getItem.get(id) as string | undefined;
  if (body === undefined) return null;
  const merged = JSON.stringify(Object.assign(JSON.parse(body), patch));
  updateItem.run(merged, id);
  return merged;
});

/** The documents of a CSV body, as Folio's CSV import reads them (header row, typed cells). */
const csvDocs = (text: string) =>
  Papa.parse<Record<string, unknown>>(text, {
    header: true,
    dynamicTyping: true,
    skipEmptyLines: true,
  }).data.map(documentOfCsvRecord);

/** The documents of an NDJSON body, one a line (empty lines skipped). */
const ndjsonDocs = (text: string): Array<Record<string, unknown>> =>
  text
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

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
router.post('/rows/items', koaBody(), (ctx) => {
  ctx.status = 201;
  ctx.type = 'application/json';
  ctx.body = rowsCreate(ctx.request.body as Record<string, unknown>);
});
router.patch('/rows/items/:id', koaBody({ jsonStrict: true, json: true }), (ctx) => {
  const merged = rowsPatch(ctx.params.id as string, ctx.request.body as Record<string, unknown>);
  if (merged === null) ctx.throw(404);
  ctx.type = 'application/json';
  ctx.body = merged;
});
router.post('/rows/bulk', koaBody({ jsonLimit: '10mb' }), (ctx) => {
  ctx.body = { results: rowsBulk(bulkOperations(ctx), 'bulk') };
});
router.post('/rows/import', koaBody({ textLimit: '200mb', text: true }), (ctx) => {
  const text = String(ctx.request.body);
  const docs = ctx.is('text/csv') ? csvDocs(text) : ndjsonDocs(text);
  const into = String(ctx.query.into ?? 'imported');
  rowsCreateMany(docs, /^[a-z0-9_]{1,40}$/.test(into) ? into : 'imported');
  ctx.body = { imported: docs.length };
});
router.get('/big', (ctx) => {
  const rows = page.all(String(ctx.query.category), Number(ctx.query.limit ?? 20)) as string[];
  ctx.type = 'application/json';
  ctx.body = `[${rows.join(',')}]`;
});
router.get('/big/count', (ctx) => {
  ctx.body = { count: count.get(String(ctx.query.category)) };
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
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
