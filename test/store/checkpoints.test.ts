/**
 * The embedded store checkpoints its WAL in a worker thread (src/store/embedded/database/checkpoints.ts):
 * the server's connection copies pages into the database file only past the backstop.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { newId } from '../../src/ids.js';
import {
  autocheckpointPages,
  BACKSTOP_PAGES,
  BackgroundCheckpoints,
} from '../../src/store/embedded/database/checkpoints.js';
import { createEmbeddedStore, DATABASE_FILE } from '../../src/store/embedded/index.js';
import { eventually } from '../support/timeout.js';
import { firstVersion, putWrite } from './fixtures.js';

describe('embedded store: WAL checkpoints in a worker thread', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-checkpoints-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('the connection checkpoints itself at SQLite’s 1,000 pages alone, at the backstop beside a worker', () => {
    expect(autocheckpointPages(false)).to.equal(1000);
    expect(autocheckpointPages(true)).to.equal(BACKSTOP_PAGES);
    expect(BACKSTOP_PAGES).to.be.above(1000);
  });

  it('copies committed pages into the database file off the main thread, and leaves no WAL when closed', async () => {
    const store = createEmbeddedStore({ dataDir: dir, eventRetentionMs: 60_000 });
    await store.init();
    const file = join(dir, DATABASE_FILE);
    try {
      expect(store.db.pragma('wal_autocheckpoint', { simple: true })).to.equal(BACKSTOP_PAGES);
      const sizeBefore = statSync(file).size;
      const scope = { projectId: newId('prj'), env: 'test' as const };
      const text = 'x'.repeat(2000);
      // About 2 MB: far below the backstop, so only the worker can have copied it.
      for (let round = 0; round < 10; round++) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            store.documents.commit(scope, 'c', [putWrite(firstVersion({ round, i, text }))]),
          ),
        );
      }
      await eventually(async () => {
        expect(store.checkpointStats?.runs).to.be.above(0);
        expect(statSync(file).size, 'pages copied into the database file').to.be.above(
          sizeBefore + 1_000_000,
        );
      });
      expect(store.checkpointStats?.failures).to.equal(0);
    } finally {
      await store.close();
    }
    expect(existsSync(`${file}-wal`), 'the WAL is gone after close').to.equal(false);
  });

  it('falls back to SQLite’s own checkpoints when the worker cannot run', async () => {
    const file = join(dir, 'fallback.db');
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    // A file the worker cannot open: it fails at start.
    const checkpoints = BackgroundCheckpoints.start(db, {
      file: join(dir, 'missing', 'nothing.db'),
      synchronous: 'FULL',
      busyTimeoutMs: 100,
    });
    expect(db.pragma('wal_autocheckpoint', { simple: true })).to.equal(BACKSTOP_PAGES);
    await eventually(async () => {
      expect(checkpoints.stats.failures).to.equal(1);
      expect(db.pragma('wal_autocheckpoint', { simple: true })).to.equal(1000);
    });
    await checkpoints.stop();
    db.close();
  });

  it('without the worker (operator commands), SQLite checkpoints inside commits as usual', async () => {
    const store = createEmbeddedStore({
      dataDir: dir,
      eventRetentionMs: 60_000,
      backgroundCheckpoints: false,
    });
    await store.init();
    try {
      expect(store.db.pragma('wal_autocheckpoint', { simple: true })).to.equal(1000);
      expect(store.checkpointStats).to.equal(null);
    } finally {
      await store.close();
    }
  });
});
