/**
 * The storage ceiling for bench/peers.ts: bare Koa over better-sqlite3 on the same rows Folio
 * holds (bench/workloads/rows.ts), WAL and `synchronous=FULL` as Folio's default, one statement
 * (or one transaction) per request. No auth, no versions, no change log, no validation: what
 * Node, Koa and SQLite cost alone for each workload.
 *
 * - `GET /items/:id`, `POST /items`, `PATCH /items/:id` (shallow merge in a transaction);
 * - `GET /big?category=&limit=` (sorted by price) and `GET /big/count?category=` over
 *   BIG_DOCS rows with an expression index on (category, price), as Folio gets a declared one;
 * - `POST /bulk` (Folio's bulk envelope, `{operations: [{method, id?, body?}]}`: the same
 *   creates, replaces, shallow merges and deletes as Folio's bulk request, in one transaction,
 *   into a table of its own);
 * - `POST /import` (NDJSON, one transaction), `POST /import/csv` (CSV read by papaparse, the
 *   same documents, one transaction), each into the table `?into=` names (made on first use),
 *   `GET /export` (RAW_EXPORT_DOCS rows as NDJSON, streamed);
 * - the same rows Folio writes, done as cheaply as raw SQL can (`/rows/...`): `POST /rows/items`
 *   and `PATCH /rows/items/:id` write the document (Folio's table and indexes, the body stored
 *   as JSONB, with the operation and key hint of its current version), copy the version it
 *   replaces into the versions table (a create has none) with the versions past the Team plan's
 *   100 pruned, and write a change row (its text and two indexes), in one transaction per
 *   request. Still no auth, validation, rate limit, log, cache or change feed: the storage
 *   ceiling of a store that keeps a history and an outbox, beside the one that keeps neither.
 *   `POST /rows/import`
 *   (NDJSON, into the collection `?into=` names) creates documents the same way, all in one
 *   transaction; `POST /rows/bulk` takes the bulk envelope and writes each operation's rows as
 *   Folio does (a delete moves the document and its history to the trash tables), in one
 *   transaction.
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
import Papa from 'papaparse';
import { newId } from '../../src/ids.js';
import { serveForBench } from '../listen.js';
import { BIG_DOCS, BODY, type BulkOperation, bigRow, documentOfCsvRecord, transferDoc } from './rows.js';

const dir = process.env.RAW_DB_DIR;
if (!dir) throw new Error('RAW_DB_DIR is required');
const ITEMS = Number(process.env.RAW_ITEMS ?? 1000);
const EXPORT_DOCS = Number(process.env.RAW_EXPORT_DOCS ?? 0);

const db = new Database(join(dir, 'raw.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
for (const table of ['items', 'big', 'imported', 'exported', 'bulk'])
  db.exec(`CREATE TABLE ${table} (id TEXT PRIMARY KEY, body TEXT NOT NULL)`);
db.exec(
  "CREATE INDEX big_category_price ON big (json_extract(body, '$.category'), json_extract(body, '$.price'))",
);
// Folio's own tables for the `/rows` routes (src/store/embedded/schema.ts), trimmed of nothing
// a write touches.
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
const historyOf = 'WHERE scope = ? AND collection = ? AND doc_id = ?';
const trashDelete = [
  db.prepare(`DELETE FROM trash_versions ${historyOf}`),
  db.prepare('DELETE FROM trash WHERE scope = ? AND collection = ? AND id = ?'),
];
const trashInsert = db.prepare(
  'INSERT INTO trash (scope, collection, id, version, deleted_at, api_key_hint, expires_at, body) ' +
    'VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
);
const trashHistory = db.prepare(
  `INSERT INTO trash_versions (${HISTORY_COLUMNS}) SELECT ${HISTORY_COLUMNS} FROM versions ${historyOf}`,
);
const trashCurrent = db.prepare(
  `INSERT INTO trash_versions (${HISTORY_COLUMNS}) SELECT scope, collection, id, version, operation, updated_at, ` +
    'api_key_hint, json(body) FROM documents WHERE scope = ? AND collection = ? AND id = ?',
);
const rowsDelete = db.prepare('DELETE FROM documents WHERE scope = ? AND collection = ? AND id = ?');
const rowsDeleteHistory = db.prepare(`DELETE FROM versions ${historyOf}`);
const TRASH_MS = 30 * 24 * 3600 * 1000;
/** A delete as Folio's rows: the document and its history move to the trash; a change row. */
const trashRows = (id: string, row: DocumentRow, collection: string) => {
  const now = new Date();
  for (const statement of trashDelete) statement.run(SCOPE, collection, id);
  const expires = new Date(now.getTime() + TRASH_MS).toISOString();
  trashInsert.run(
    SCOPE,
    collection,
    id,
    row.version,
    now.toISOString(),
    'folio_sk_...abcd',
    expires,
    row.body,
  );
  trashHistory.run(SCOPE, collection, id);
  trashCurrent.run(SCOPE, collection, id);
  rowsDelete.run(SCOPE, collection, id);
  rowsDeleteHistory.run(SCOPE, collection, id);
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

const bulkGet = db.prepare('SELECT body FROM bulk WHERE id = ?').pluck();
const bulkInsert = insert('bulk');
const bulkUpsert = db.prepare(
  'INSERT INTO bulk (id, body) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body',
);
const bulkUpdate = db.prepare('UPDATE bulk SET body = ? WHERE id = ?');
const bulkDelete = db.prepare('DELETE FROM bulk WHERE id = ?');
/**
 * The same operations on one (id, body) table, as cheaply as SQL does them: a replace is an
 * upsert (it does not tell a create from a replace), a merge reads, merges and updates, a
 * delete deletes. A create over an existing id throws and rolls back the whole request (the
 * bench never sends one).
 */
const rawBulk = db.transaction((operations: BulkOperation[]) =>
  operations.map((op): BulkItem => {
    const id = op.id ?? newId('doc');
    // A DELETE is the default (the envelope's four methods).
    switch (op.method) {
      case 'POST':
        bulkInsert.run(id, JSON.stringify({ ...op.body, _id: id }));
        return { status: 201, _id: id };
      case 'PUT':
        bulkUpsert.run(id, JSON.stringify({ ...op.body, _id: id }));
        return { status: 200, _id: id };
      case 'PATCH': {
        const body = bulkGet.get(id) as string | undefined;
        if (body === undefined) return { status: 404, _id: id };
        bulkUpdate.run(JSON.stringify(Object.assign(JSON.parse(body), op.body)), id);
        return { status: 200, _id: id };
      }
      default:
        return { status: bulkDelete.run(id).changes > 0 ? 204 : 404, _id: id };
    }
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
/** A table of its own for each import round (`?into=`), as Folio imports into a new collection. */
const tables = new Map<string, Database.Statement>([['imported', insertImported]]);
function insertInto(name: unknown): Database.Statement {
  const table = typeof name === 'string' && /^[a-z0-9_]{1,40}$/.test(name) ? name : 'imported';
  let statement = tables.get(table);
  if (!statement) {
    db.exec(`CREATE TABLE IF NOT EXISTS ${table} (id TEXT PRIMARY KEY, body TEXT NOT NULL)`);
    statement = insert(table);
    tables.set(table, statement);
  }
  return statement;
}
const insertMany = db.transaction((docs: unknown[], into: Database.Statement = insertImported) => {
  for (const doc of docs) into.run(randomUUID(), JSON.stringify(doc));
});

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
  const docs = ndjsonDocs(String(ctx.request.body));
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
router.post('/bulk', koaBody({ jsonLimit: '10mb' }), (ctx) => {
  ctx.body = { results: rawBulk(bulkOperations(ctx)) };
});
router.post('/import', koaBody({ textLimit: '200mb', text: true }), (ctx) => {
  const docs = ndjsonDocs(String(ctx.request.body));
  insertMany(docs, insertInto(ctx.query.into));
  ctx.body = { imported: docs.length };
});
router.post('/import/csv', koaBody({ textLimit: '200mb', text: true }), (ctx) => {
  const parsed = Papa.parse<Record<string, unknown>>(String(ctx.request.body), {
    header: true,
    dynamicTyping: true,
    skipEmptyLines: true,
  });
  const docs = parsed.data.map(documentOfCsvRecord);
  insertMany(docs, insertInto(ctx.query.into));
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
