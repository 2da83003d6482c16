/**
 * The classification of start-up errors, fed with real errors: produced by the file system, the
 * network stack, the MongoDB driver and Folio's own modules, never hand-made look-alikes.
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { MongoClient, MongoServerError } from 'mongodb';
import { startupErrorReport } from '../../src/cli/startupErrors.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { DataDirError, prepareDataDir } from '../../src/store/embedded/database/dataDir.js';
import { DataDirLockedError, lockDataDir } from '../../src/store/embedded/database/dataDirLock.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import { checkServer, UnsupportedServerError } from '../../src/store/mongodb/startup/serverCheck.js';
import { tempDir } from '../support/tempDir.js';
import { rejection } from '../support/timeout.js';

function caught(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

/** The error a server gets when it listens on `port` of `host`. */
async function listenError(port: number, host: string): Promise<unknown> {
  const server = createServer();
  const failed = once(server, 'error');
  server.listen(port, host);
  const [error] = await failed;
  return error;
}

function expectOneLineWithoutStack(report: string): void {
  expect(report.split('\n'), report).to.have.length(1);
  expect(report).to.not.include('    at ');
}

/** The report of `error`: one line that starts with FOLIO_DATA_DIR and names `path`. */
function dataDirReport(error: unknown, path: string): string {
  const report = startupErrorReport(error);
  expectOneLineWithoutStack(report);
  expect(report).to.match(/^FOLIO_DATA_DIR: /);
  expect(report).to.include(path);
  return report;
}

describe('start-up errors: one line naming the variable', () => {
  const dir = tempDir('folio-startup-errors-', 'suite');

  it('a bad configuration value is reported by the variable that holds it', () => {
    const error = caught(() => loadConfig({ PORT: 'eighty' }));
    expect(error).to.be.instanceOf(ConfigError);
    expect(startupErrorReport(error)).to.match(/PORT: expected a number, got "eighty"/);
  });

  it('FOLIO_DATA_DIR that is a file, or under a file, names the variable, the path and the reason', async () => {
    const file = join(dir(), 'a-file');
    await writeFile(file, 'not a directory');
    const isFile = caught(() => prepareDataDir(file));
    expect(isFile).to.be.instanceOf(DataDirError);
    expect(dataDirReport(isFile, file)).to.include('it is a file, not a directory');

    const under = startupErrorReport(caught(() => prepareDataDir(join(file, 'data'))));
    expectOneLineWithoutStack(under);
    expect(under).to.include('a part of the path is a file, not a directory');
  });

  it('a data directory held by another process names the directory and the holder’s PID', () => {
    const locked = join(dir(), 'locked');
    prepareDataDir(locked);
    const lock = lockDataDir(locked);
    try {
      const error = caught(() => lockDataDir(locked));
      expect(error).to.be.instanceOf(DataDirLockedError);
      expect(dataDirReport(error, locked)).to.include(`PID ${process.pid}`);
    } finally {
      lock.release();
    }
  });

  it('a malformed MONGODB_URI names the variable and what the driver refused', () => {
    const scheme = startupErrorReport(caught(() => new MongoClient('localhost:27017')));
    expectOneLineWithoutStack(scheme);
    expect(scheme).to.match(/^MONGODB_URI is not a usable MongoDB connection string: Invalid scheme/);
    const option = startupErrorReport(
      caught(() => new MongoClient('mongodb://h/?serverSelectionTimeoutMS=soon')),
    );
    expect(option).to.match(
      /^MONGODB_URI is not a usable MongoDB connection string: .*serverSelectionTimeoutMS/,
    );
  });

  it('an unreachable MongoDB names MONGODB_URI and the network error', async function () {
    this.timeout(10_000);
    // Port 1 on the loopback: refused at once; the short selection timeout bounds the wait.
    const store = createMongoStore({ uri: 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300' });
    const error = await rejection(store.init());
    await store.close();
    const report = startupErrorReport(error);
    expectOneLineWithoutStack(report);
    // The host asked directly: which one, and why it cannot be reached.
    expect(report).to.match(
      /^MONGODB_URI: cannot connect to MongoDB: 127\.0\.0\.1:1 is unreachable \(ECONNREFUSED: connection refused/,
    );
  });

  it('MongoDB refusing the credentials or a permission, or an unusable deployment, names MONGODB_URI', () => {
    const auth = new MongoServerError({ ok: 0, code: 18, errmsg: 'Authentication failed.' });
    expect(startupErrorReport(new Error('connect failed', { cause: auth }))).to.equal(
      'MONGODB_URI: MongoDB refused the user name or password in the URI (Authentication failed.)',
    );
    const denied = new MongoServerError({ ok: 0, code: 13, errmsg: 'not authorized on folio_system' });
    expect(startupErrorReport(denied)).to.match(
      /^MONGODB_URI: the MongoDB user in the URI lacks a permission/,
    );
    const verdict = checkServer({ ismaster: true }, { version: '7.0.2', versionArray: [7, 0, 2, 0] });
    if (verdict.ok) throw new Error('a standalone server must be refused');
    const standalone = startupErrorReport(new UnsupportedServerError(verdict.message, verdict.problems));
    expect(standalone).to.match(/^MONGODB_URI: /);
    expect(standalone).to.include('standalone');
  });

  it('a taken port, a foreign address and an unknown host name PORT or HOST', async () => {
    const blocker: Server = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    try {
      const { port } = blocker.address() as { port: number };
      const taken = startupErrorReport(await listenError(port, '127.0.0.1'));
      expectOneLineWithoutStack(taken);
      expect(taken).to.match(
        /^PORT: listen EADDRINUSE.*set PORT to another one \(PORT=0 picks a free port\)/,
      );
    } finally {
      blocker.close();
    }
    // 192.0.2.1 is reserved for documentation (RFC 5737): never an address of this machine.
    const foreign = startupErrorReport(await listenError(0, '192.0.2.1'));
    expect(foreign).to.match(/^HOST: listen EADDRNOTAVAIL/);
    // .invalid never resolves (RFC 6761).
    const unknown = startupErrorReport(await listenError(0, 'folio-no-such-host.invalid'));
    expect(unknown).to.match(/^HOST: cannot resolve "folio-no-such-host\.invalid"/);
  });

  it('anything else prints its message without the stack, unless FOLIO_LOG_LEVEL asks for debug', () => {
    const error = new Error('the disk caught fire');
    const plain = startupErrorReport(error, {});
    expectOneLineWithoutStack(plain);
    expect(plain).to.equal('folio: the disk caught fire (FOLIO_LOG_LEVEL=debug prints the stack trace)');
    expect(startupErrorReport(error, { FOLIO_LOG_LEVEL: 'debug' })).to.include('    at ');
    expect(startupErrorReport(error, { FOLIO_LOG_LEVEL: 'info' })).to.not.include('    at ');
    expect(startupErrorReport('a string')).to.equal('folio: a string');
  });

  it('follows causes without looping on a cycle', () => {
    const a = new Error('outer');
    const b = new Error('inner', { cause: a });
    a.cause = b;
    expect(startupErrorReport(a)).to.match(/^folio: outer/);
  });
});
