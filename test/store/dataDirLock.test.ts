import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { DataDirError, dataDirProblem, prepareDataDir } from '../../src/store/embedded/database/dataDir.js';
import { DataDirLockedError, lockDataDir, PID_FILE } from '../../src/store/embedded/database/dataDirLock.js';
import { createEmbeddedStore } from '../../src/store/embedded/index.js';
import { rejection } from '../support/timeout.js';

describe('embedded store: one process per data directory', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-lock-'));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a second lock on a held directory is refused with the holder’s PID; release frees it', () => {
    const first = lockDataDir(dataDir);
    expect(readFileSync(join(dataDir, PID_FILE), 'utf8').trim()).to.equal(String(process.pid));
    let refused: unknown;
    try {
      lockDataDir(dataDir);
    } catch (error) {
      refused = error;
    }
    expect(refused).to.be.instanceOf(DataDirLockedError);
    expect((refused as DataDirLockedError).pid).to.equal(process.pid);
    expect((refused as DataDirLockedError).dir).to.equal(dataDir);
    first.release();
    first.release();
    expect(existsSync(join(dataDir, PID_FILE)), 'the pid file goes with the lock').to.equal(false);
    lockDataDir(dataDir).release();
  });

  it('a second store on the same directory refuses to open until the first closes', async () => {
    const first = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    await first.init();
    const second = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    try {
      expect(await rejection(second.init())).to.be.instanceOf(DataDirLockedError);
      // Operator commands open without the lock, beside the running store.
      const tool = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000, lock: false });
      await tool.init();
      await tool.close();
    } finally {
      await first.close();
    }
    await second.init();
    await second.close();
  });

  it('a directory that cannot be used is a DataDirError naming the reason, and leaves no lock behind', async () => {
    const file = join(dataDir, 'a-file');
    await writeFile(file, 'x');
    const store = createEmbeddedStore({ dataDir: file, eventRetentionMs: 60_000 });
    const error = await rejection(store.init());
    expect(error).to.be.instanceOf(DataDirError);
    expect((error as DataDirError).reason).to.equal('it is a file, not a directory');

    await writeFile(
      join(dataDir, 'folio.db'),
      'this is not a SQLite database, but long enough to be read as one.',
    );
    const damaged = createEmbeddedStore({ dataDir, eventRetentionMs: 60_000 });
    const notADatabase = await rejection(damaged.init());
    expect(notADatabase).to.be.instanceOf(DataDirError);
    expect((notADatabase as DataDirError).reason).to.include('not a Folio (SQLite) database');
    // The failed open released the lock it took.
    lockDataDir(dataDir).release();
  });

  it('recognises file-system and SQLite file errors, and nothing else', () => {
    let enotdir: unknown;
    try {
      prepareDataDir(join('/dev/null', 'data'));
    } catch (error) {
      enotdir = error;
    }
    expect((enotdir as DataDirError).reason).to.equal('a part of the path is a file, not a directory');
    expect(dataDirProblem(new Error('newer Folio'))).to.equal(null);
    expect(dataDirProblem('EACCES')).to.equal(null);
  });
});
