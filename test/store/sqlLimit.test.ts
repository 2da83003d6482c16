/**
 * LIMIT and OFFSET parameters in the embedded store's SQL go through BOUND_COUNT
 * (src/store/embedded/query/sqlLimit.ts): a plain `LIMIT ?` made SQLite prepare the statement again on
 * every run. Speed belongs to the benchmarks; this checks the rule itself (no plain parameter
 * after LIMIT or OFFSET anywhere in src/) and that the CAST form keeps LIMIT's meaning at its
 * edges (-1 is no limit, 0 is no row).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { BOUND_COUNT, boundCount } from '../../src/store/embedded/query/sqlLimit.js';

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('embedded store: bound LIMIT and OFFSET', () => {
  it('no SQL in src/ puts a plain parameter after LIMIT or OFFSET', () => {
    // `?`, `?3`, `@name`, `:name`, `$name` (not a `${...}` template part); comments aside.
    const plain = /\b(LIMIT|OFFSET)\s+(\?|[@:]\w|\$(?!\{))/;
    const offenders = sources('src').flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
        .filter(({ line }) => plain.test(line) && !/^\s*(\*|\/\/)/.test(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(offenders).to.deep.equal([]);
  });

  it('means what LIMIT and OFFSET mean: -1 no limit, 0 no row, an offset skips', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (n INTEGER PRIMARY KEY)');
      const insert = db.prepare('INSERT INTO t (n) VALUES (?)');
      for (let n = 1; n <= 5; n++) insert.run(n);
      const page = db
        .prepare<[number, number], number>(
          `SELECT n FROM t ORDER BY n LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}`,
        )
        .pluck();
      expect(page.all(-1, 0)).to.deep.equal([1, 2, 3, 4, 5]);
      expect(page.all(0, 0)).to.deep.equal([]);
      expect(page.all(2, 0)).to.deep.equal([1, 2]);
      expect(page.all(2, 4)).to.deep.equal([5]);
      expect(page.all(-1, 5)).to.deep.equal([]);
      const named = db
        .prepare<{ keep: number }, number>(`SELECT n FROM t ORDER BY n LIMIT -1 OFFSET ${boundCount('keep')}`)
        .pluck();
      expect(named.all({ keep: 3 })).to.deep.equal([4, 5]);
    } finally {
      db.close();
    }
  });
});
