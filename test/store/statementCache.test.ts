/**
 * The embedded store's prepared statements (src/store/embedded/query/statementCache.ts): bounded, the
 * least recently used out first.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { StatementCache } from '../../src/store/embedded/query/statementCache.js';

describe('StatementCache', () => {
  let db: Database.Database;
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => {
    db.close();
  });

  it('reuses a statement, and when full prepares again the least recently used, not the first prepared', () => {
    const cache = new StatementCache(db, 2);
    const one = cache.get<{ n: number }>('SELECT 1 AS n');
    const two = cache.get('SELECT 2 AS n');
    expect(cache.get('SELECT 1 AS n')).to.equal(one);
    cache.get('SELECT 3 AS n');
    expect(cache.get('SELECT 1 AS n')).to.equal(one);
    expect(cache.get('SELECT 2 AS n')).to.not.equal(two);
    expect(one.get()).to.deep.equal({ n: 1 });
  });
});
