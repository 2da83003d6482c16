import Database from 'better-sqlite3';
import { compileFilter, compileSort } from './src/store/embedded/compileQuery.js';
import { registerQueryFunctions } from './src/store/embedded/queryFunctions.js';
const db = new Database(':memory:');
registerQueryFunctions(db);
db.exec(`CREATE TABLE documents (scope TEXT, collection TEXT, id TEXT, version INTEGER, created_at TEXT, updated_at TEXT, body TEXT, PRIMARY KEY (scope, collection, id))`);
const docs: any[] = [
 {_id:'a_empty_subobject', a:{}}, {_id:'a_null', a:null}, {_id:'a_number', a:4}, {_id:'a_subobject_b_not_null', a:{b:'hi'}},
 {_id:'a_subobject_b_null', a:{b:null}}, {_id:'no_a'}, {_id:'a_double_array', a:[[]]}, {_id:'a_empty_array', a:[]},
 {_id:'a_object_array_b_mix_null_undefined_missing', a:[{b:null},{b:null},{}]}, {_id:'a_object_array_no_b_nulls', a:[{b:1},{b:3},{b:'string'}]},
 {_id:'a_object_array_some_b_nulls', a:[{b:null},{b:3},{b:null}]}, {_id:'a_object_array_some_b_missing', a:[{b:3},{}]},
 {_id:'a_value_array_all_nulls', a:[null,null]}, {_id:'a_value_array_no_nulls', a:[1,'string',4]}, {_id:'a_value_array_with_null', a:[1,'string',null,4]},
];
const ins = db.prepare('INSERT INTO documents VALUES (?,?,?,?,?,?,?)');
for (const d of docs) ins.run('s','c',d._id,1,'t','t',JSON.stringify({...d,_folio:{version:1}}));
function run(f: any) {
  const w = compileFilter(f);
  const rows = db.prepare(`SELECT d.id FROM documents d WHERE d.scope='s' AND (${w.sql}) ORDER BY d.id`).all(...w.params) as any[];
  console.log(JSON.stringify(f), '=>', rows.map(r=>r.id).join(' '));
}
run({a: {$in: [null]}});
run({'a.b': {$in: [null]}});
run({'a.b': {$nin: [null, 75]}});
run({'a.b': {$exists: false}});
run({'a.b': {$gt: 2}});
run({'a.0': {$in: [1, null]}});
const w = compileFilter({'a.b.c': {$in: ['x', 5, null]}});
console.log(w.sql, w.params);
const s = compileSort([['a.b', 1], ['_id', 1]]);
console.log(s);
console.log(db.prepare(`SELECT d.id FROM documents d ORDER BY ${s.sql}`).all(...s.params).map((r:any)=>r.id).join('\n'));
