/**
 * The embedded store's declared indexes are partial, limited to the declaring collection: a
 * write elsewhere in the file neither enters nor computes them (src/store/embedded/indexes/declaredIndexes.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import { createEmbeddedStore, DATABASE_FILE, type EmbeddedStore } from '../../src/store/embedded/index.js';
import { registerQueryFunctions } from '../../src/store/embedded/query/queryFunctions.js';
import { firstVersion, putWrite } from './fixtures.js';

/** Rows in each of Folio's per-path indexes, from SQLite's own statistics. */
function pathIndexRows(db: Database.Database): Map<string, number> {
  db.exec('ANALYZE documents');
  const rows = db
    .prepare<[], { idx: string; stat: string }>(
      "SELECT idx, stat FROM sqlite_stat1 WHERE idx LIKE 'fx\\_%' ESCAPE '\\'",
    )
    .all();
  return new Map(rows.map((r) => [r.idx, Number(r.stat.split(' ')[0])]));
}

function pathIndexSql(db: Database.Database): string[] {
  return db
    .prepare<[], { sql: string }>(
      "SELECT sql FROM sqlite_master WHERE type = 'index' AND name LIKE 'fx\\_%' ESCAPE '\\' AND name NOT LIKE 'fx\\_unique\\_%' ESCAPE '\\'",
    )
    .all()
    .map((r) => r.sql);
}

describe('embedded store: declared indexes cover their own collection only', () => {
  let dir = '';
  let store: EmbeddedStore;
  const scope = { projectId: newId('prj'), env: 'test' as const };
  const other = { projectId: newId('prj'), env: 'test' as const };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-index-scope-'));
    store = createEmbeddedStore({ dataDir: dir, eventRetentionMs: 60_000 });
    await store.init();
  });
  afterEach(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const put = (s: typeof scope, collection: string, n: number) =>
    Promise.all(
      Array.from({ length: n }, (_, i) =>
        store.documents.commit(s, collection, [putWrite(firstVersion({ price: i }))]),
      ),
    );

  /** `price` declared on collection a; 3 documents in a and 5 in b of the same project. */
  const declarePriceWithDocuments = async () => {
    await store.indexes.create(
      scope,
      'a',
      {
        name: 'price_1',
        fields: [{ path: 'price', order: 1 }],
        unique: false,
      },
      100,
    );
    await put(scope, 'a', 3);
    await put(scope, 'b', 5);
  };

  it('holds the declaring collection’s documents, not those of another collection or project', async () => {
    await declarePriceWithDocuments();
    await put(other, 'a', 4);
    const rows = pathIndexRows(store.db);
    expect(rows.size, 'high, low and sort').to.equal(3);
    for (const [name, count] of rows) expect(count, name).to.equal(3);
    // The same path declared in another collection: indexes of its own.
    await store.indexes.create(
      scope,
      'b',
      {
        name: 'price_1',
        fields: [{ path: 'price', order: 1 }],
        unique: false,
      },
      100,
    );
    const both = pathIndexRows(store.db);
    expect(both.size).to.equal(6);
    expect([...both.values()].sort()).to.deep.equal([3, 3, 3, 5, 5, 5]);
    // Dropping one collection's declaration leaves the other's.
    await store.indexes.drop(scope, 'a', 'price_1');
    expect([...pathIndexRows(store.db).values()]).to.deep.equal([5, 5, 5]);
    const found = await store.documents.find(scope, 'b', {
      filter: { price: { $gte: 1 } },
      sort: [['price', -1]],
      skip: 0,
      limit: 10,
    });
    expect(found.map((d) => d.price)).to.deep.equal([4, 3, 2, 1]);
  });

  it('walks a two-field declaration’s compound sort index for equality on the first field and a sort on the second', async () => {
    await store.indexes.create(
      scope,
      'a',
      {
        name: 'category_1_price_1',
        fields: [
          { path: 'category', order: 1 },
          { path: 'price', order: 1 },
        ],
        unique: false,
      },
      100,
    );
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        store.documents.commit(scope, 'a', [
          putWrite(firstVersion({ category: `c${i % 10}`, price: (i * 37) % 100 })),
        ]),
      ),
    );
    for (const direction of [1, -1] as const) {
      const query = {
        filter: { category: { $in: ['c3'] } },
        sort: [
          ['price', direction],
          ['_id', direction],
        ] as Array<[string, 1 | -1]>,
        skip: 0,
        limit: 5,
      };
      const plan = await store.documents.explain(scope, 'a', query);
      expect(plan.index).to.equal('category_1_price_1');
      expect(plan.detail.join('\n')).to.match(
        /SEARCH d USING INDEX fx_sortn_\w+ \(scope=\? AND collection=\? AND <expr>=\?\)/,
      );
      expect(plan.detail.join('\n'), 'nothing sorted').not.to.include('TEMP B-TREE');
      expect(plan.documentsExamined, 'the page alone is read').to.equal(5);
      const found = await store.documents.find(scope, 'a', query);
      const all = (await store.documents.find(scope, 'a', { ...query, limit: 0 })).map(
        (d) => d.price as number,
      );
      expect(all).to.have.length(30);
      const sorted = [...all].sort((x, y) => (x - y) * direction);
      expect(found.map((d) => d.price)).to.deep.equal(sorted.slice(0, 5));
    }
    // Dropping the declaration drops its compound index too.
    await store.indexes.drop(scope, 'a', 'category_1_price_1');
    expect(pathIndexSql(store.db)).to.deep.equal([]);
  });

  it('rebuilds indexes of older files (one per path, shared by every collection) as per-collection ones', async () => {
    await declarePriceWithDocuments();
    await store.close();
    // The layout of earlier versions: the path's indexes over the whole table.
    const db = new Database(join(dir, DATABASE_FILE));
    registerQueryFunctions(db);
    for (const name of db
      .prepare<[], { name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'fx\\_%' ESCAPE '\\'",
      )
      .all()) {
      db.exec(`DROP INDEX ${name.name}`);
    }
    db.exec(
      `CREATE INDEX fx_high_0123456789abcdef0123 ON documents (scope, collection, (CASE json_type(body, '$."price"') WHEN 'array' THEN X'' ELSE json_extract(body, '$."price"') END))`,
    );
    db.close();
    store = createEmbeddedStore({ dataDir: dir, eventRetentionMs: 60_000 });
    await store.init();
    const sql = pathIndexSql(store.db);
    expect(sql).to.have.length(3);
    for (const text of sql) expect(text).to.match(/WHERE scope = '.+' AND collection = 'a'$/);
    expect([...pathIndexRows(store.db).values()]).to.deep.equal([3, 3, 3]);
  });
});
