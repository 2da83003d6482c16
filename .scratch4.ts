import Database from 'better-sqlite3';
import { parseListQuery } from './src/query/listQuery.js';
import { compileFilter, compileSort } from './src/store/embedded/compileQuery.js';
import { registerQueryFunctions } from './src/store/embedded/queryFunctions.js';
import { applySchema } from './src/store/embedded/schema.js';
const db = new Database(':memory:');
applySchema(db); registerQueryFunctions(db);
const ins = db.prepare('INSERT INTO documents VALUES (?,?,?,?,?,?,?)');
const t0 = Date.now();
db.transaction(() => {
  for (let i = 0; i < 100000; i++) {
    const id = `doc_${String(i).padStart(8, '0')}`;
    const ts = new Date(1.7e12 + i * 1000).toISOString();
    const doc = { _id: id, name: `user ${i}`, age: i % 90, city: ['Paris', 'Berlin', 'Zürich'][i % 3], tags: ['a', 'b', String(i % 7)], address: { city: 'X' + (i % 100), zip: i % 1000 }, items: [{ k: i % 5 }, { k: (i * 7) % 11 }], _folio: { version: 1 + (i % 3), createdAt: ts, updatedAt: ts } };
    ins.run('s', 'c', id, doc._folio.version, ts, ts, JSON.stringify(doc));
  }
})();
console.log('insert', Date.now() - t0, 'ms');
function q(params: Record<string, string>) {
  const lq = parseListQuery(params);
  const w = compileFilter(lq.filter); const o = compileSort(lq.sort);
  const sql = `SELECT d.body FROM documents d WHERE d.scope = ? AND d.collection = ? AND (${w.sql}) ORDER BY ${o.sql} LIMIT ? OFFSET ?`;
  const args = ['s', 'c', ...w.params, ...o.params, lq.limit, lq.offset];
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args).map((r: any) => r.detail).join(' | ');
  const st = db.prepare(sql);
  const t = performance.now(); const rows = st.all(...args); const ms = performance.now() - t;
  const c = db.prepare(`SELECT count(*) n FROM documents d WHERE d.scope = ? AND d.collection = ? AND (${w.sql})`);
  const t2 = performance.now(); const n = (c.get('s','c',...w.params) as any).n; const ms2 = performance.now() - t2;
  console.log(JSON.stringify(params), rows.length, 'rows', ms.toFixed(1), 'ms; count', n, ms2.toFixed(1), 'ms\n   ', plan);
}
q({ 'filter[age][gt]': '50', sort: '-$createdAt' });
q({ 'filter[city]': 'Berlin', sort: '$updatedAt' });
q({ 'filter[age]': '30', sort: '_id' });
q({ 'filter[$createdAt][gte]': '2023-11-15', sort: '$createdAt' });
q({ 'filter[_id][gt]': 'doc_00050000' });
q({ 'filter[address.city]': 'X5', sort: '-$createdAt' });
q({ 'filter[items.k]': '3', sort: '-_id' });
q({ 'filter[name][contains]': 'USER 9999' });
q({ sort: '-age' });
q({ sort: 'items.k', 'filter[tags]': '3' });
q({ 'filter[$version]': '2', sort: '-$version' });
q({ 'filter[age][gte]': '10', 'filter[age][lt]': '20', 'filter[city][in]': 'Paris,Zürich', sort: '-$createdAt', offset: '1000' });
for (const sql of [
  `SELECT count(*) n FROM documents d WHERE d.scope='s' AND d.collection='c' AND json_extract(d.body, '$.age') > 50`,
  `SELECT count(*) n FROM documents d WHERE d.scope='s' AND d.collection='c' AND json_type(d.body, '$.age') = 'integer' AND json_extract(d.body, '$.age') > 50`,
  `SELECT count(*) n FROM documents d WHERE d.scope='s' AND d.collection='c' AND (d.body -> '$.age') > 50`,
  `SELECT count(*) n FROM documents d WHERE d.scope='s' AND d.collection='c' AND length(d.body) > 50`,
]) { const t = performance.now(); const r = db.prepare(sql).get(); console.log((performance.now()-t).toFixed(1), 'ms', r, sql.slice(80)); }
