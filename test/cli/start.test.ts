import { once } from 'node:events';
import { createServer } from 'node:net';
import { expect } from 'chai';
import { readHolderPid } from '../../src/store/embedded/database/dataDirLock.js';
import { runFolio } from '../support/cli.js';
import { devAccount, serveFolio, spawnFolio, stopFolio as stop } from '../support/folioProcess.js';
import { tempDir } from '../support/tempDir.js';

describe('npm start (folio serve)', function () {
  this.timeout(60_000);
  // A fresh data directory per test: the first-start test needs a store no other test has touched.
  const dataDir = tempDir('folio-start-');

  it('first start on an empty store prints the URL, a login and a working test key once; SIGTERM exits 0', async () => {
    const first = await serveFolio({ FOLIO_DATA_DIR: dataDir() });
    const { email, key } = devAccount(first);
    expect(email).to.equal('dev@folio.local');
    // The URL it prints leads somewhere: an index of links.
    const index = await fetch(first.url);
    expect(index.status).to.equal(200);
    expect(((await index.json()) as { links: { health: string } }).links.health).to.equal('/healthz');
    const health = await fetch(`${first.url}/healthz`);
    expect(health.status).to.equal(200);
    const created = await fetch(`${first.url}/default/notes`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ title: 'hello' }),
    });
    expect(created.status).to.equal(201);
    // The dashboard is served by the same start, no build step.
    expect(first.output()).to.include(`Dashboard: ${first.url}/dashboard/\n`);
    const dashboard = await fetch(`${first.url}/dashboard/`);
    expect(dashboard.status).to.equal(200);
    expect(await dashboard.text()).to.include('<title>Folio dashboard</title>');
    expect(await stop(first)).to.equal(0);

    const second = await serveFolio({ FOLIO_DATA_DIR: dataDir() });
    expect(second.output()).to.not.match(/folio_sk_/);
    expect(second.output()).to.include('Get an API key');
    const list = await fetch(`${second.url}/default/notes`, { headers: { Authorization: `Bearer ${key}` } });
    expect(((await list.json()) as { meta: { total: number } }).meta.total).to.equal(1);
    expect(await stop(second)).to.equal(0);
  });

  it('a taken port stops start-up with a hint instead of a stack trace', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const { port } = blocker.address() as { port: number };
    try {
      const { code, err } = await runFolio(['serve'], {
        PORT: String(port),
        HOST: '127.0.0.1',
        FOLIO_DATA_DIR: dataDir(),
      });
      expect(code).to.equal(1);
      expect(err).to.include('set PORT to another one');
      expect(err).to.not.include('    at ');
    } finally {
      blocker.close();
    }
  });

  /** `folio serve` on a new data directory, caught the moment it takes the directory's lock. */
  async function caughtStarting() {
    const dir = dataDir();
    const { child, output } = spawnFolio({ FOLIO_DATA_DIR: dir });
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    // The pid file is written when start-up takes the lock, before the first start's store
    // set-up and the banner.
    while (readHolderPid(dir) === null && child.exitCode === null && child.signalCode === null) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(output(), 'caught before its banner').to.not.include('listening on');
    return { dir, child, exited, output };
  }

  it('a SIGTERM while it starts closes it cleanly once started', async () => {
    const starting = await caughtStarting();
    starting.child.kill('SIGTERM');
    const [code, signal] = await starting.exited;
    expect({ code, signal }, starting.output()).to.deep.equal({ code: 0, signal: null });
    expect(starting.output()).to.include('listening on');
    expect(starting.output()).to.include('SIGTERM received: closing...');
    expect(readHolderPid(starting.dir), 'the pid file is removed on a clean close').to.equal(null);
  });

  it('a second signal while it starts exits at once', async () => {
    const starting = await caughtStarting();
    starting.child.kill('SIGINT');
    // Two signals sent together may arrive as one: the second goes once the first was taken.
    while (
      !starting.output().includes('SIGINT received while starting') &&
      starting.child.exitCode === null &&
      starting.child.signalCode === null
    ) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    starting.child.kill('SIGINT');
    const [code] = await starting.exited;
    expect(code, starting.output()).to.equal(1);
    expect(starting.output()).to.not.include('listening on');
  });

  it('a bad configuration value stops start-up naming the variable', async () => {
    const { code, err } = await runFolio(['serve'], { PORT: 'not-a-port', FOLIO_DATA_DIR: dataDir() });
    expect(code).to.equal(1);
    expect(err).to.include('PORT: expected a number');
  });
});
