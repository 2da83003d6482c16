/** Where the embedded store's connection keeps SQLite's temporary files (src/store/embedded/database/tempStore.ts). */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { keepTemporaryInMemory, withSortsOnDisk } from '../../src/store/embedded/database/tempStore.js';

const MEMORY = 2;
const FILE = 1;

describe('embedded store: temporary files', () => {
  it('puts whole-table sorts on disk for the build, and memory back after it, even when it fails', () => {
    const db = new Database(':memory:');
    keepTemporaryInMemory(db);
    expect(db.pragma('temp_store', { simple: true })).to.equal(MEMORY);
    const during = withSortsOnDisk(db, () => db.pragma('temp_store', { simple: true }));
    expect(during).to.equal(FILE);
    expect(db.pragma('temp_store', { simple: true })).to.equal(MEMORY);
    expect(() =>
      withSortsOnDisk(db, () => {
        throw new Error('index build failed');
      }),
    ).to.throw('index build failed');
    expect(db.pragma('temp_store', { simple: true })).to.equal(MEMORY);
    db.close();
  });
});
