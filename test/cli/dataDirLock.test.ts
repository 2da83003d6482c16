import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';

describe('folio serve: one process per embedded data directory', function () {
  this.timeout(60_000);
  let dataDir: string;
  let running: FolioProcess[] = [];
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-lock-cli-'));
  });
  after(async () => {
    for (const started of running) await stopFolio(started);
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a second server on the same directory refuses, naming the directory and the running PID', async () => {
    const first = await serveFolio({ FOLIO_DATA_DIR: dataDir });
    running.push(first);
    const second = await runFolio(['serve'], { PORT: '0', HOST: '127.0.0.1', FOLIO_DATA_DIR: dataDir });
    expect(second.code, second.err).to.equal(1);
    expect(second.err.trimEnd().split('\n')).to.deep.equal([
      `FOLIO_DATA_DIR: ${dataDir} is in use by another Folio process (PID ${first.child.pid}). ` +
        'Stop that process first, or set FOLIO_DATA_DIR to another directory: the embedded store serves one process.',
    ]);
    expect((await fetch(`${first.url}/healthz`)).status, 'the first server is untouched').to.equal(200);

    // The operator commands still work beside the running server.
    const account = await runFolio(['account', 'create', '--email', 'ops@example.test'], {
      FOLIO_DATA_DIR: dataDir,
      FOLIO_LOG_LEVEL: 'silent',
    });
    expect(account.code, account.err).to.equal(0);
  });

  it('a kill -9 of the running server leaves no stale lock: the next start succeeds', async () => {
    const first = running[0] ?? (await serveFolio({ FOLIO_DATA_DIR: dataDir }));
    const exited = once(first.child, 'exit');
    first.child.kill('SIGKILL');
    await exited;
    running = [];
    // This start also shows the warning for a mistyped FOLIO_ variable (one line on stderr).
    const next = await serveFolio({ FOLIO_DATA_DIR: dataDir, FOLIO_DATADIR: '/tmp/elsewhere' });
    running.push(next);
    expect(next.output()).to.include(
      'warning: FOLIO_DATADIR is not a Folio setting and is ignored (see README "Configuration")\n',
    );
    expect(next.output()).to.not.match(/warning: FOLIO_(DATA_DIR|LOG_LEVEL) /);
    expect((await fetch(`${next.url}/healthz`)).status).to.equal(200);
    expect(await stopFolio(next)).to.equal(0);
  });
});
