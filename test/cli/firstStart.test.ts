/**
 * The first start cannot strand a user: the dev account, project and key are created only once
 * the server listens, so a first start that fails (here: a taken port) leaves nothing behind and
 * the next start creates them and prints their secrets. The secrets are never stored.
 */
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { devAccount, serveFolio, stopFolio } from '../support/folioProcess.js';
import { tempDir } from '../support/tempDir.js';

describe('folio serve: a first start that fails strands nothing', function () {
  this.timeout(60_000);
  const dataDir = tempDir('folio-first-start-');

  it('after a first start on a taken port, the next start creates the dev account and prints it', async () => {
    const blocker = createServer().listen(0, '127.0.0.1');
    await once(blocker, 'listening');
    const { port } = blocker.address() as { port: number };
    try {
      const failed = await runFolio(['serve'], {
        PORT: String(port),
        HOST: '127.0.0.1',
        FOLIO_DATA_DIR: dataDir(),
        FOLIO_LOG_LEVEL: 'silent',
      });
      expect(failed.code, failed.err).to.equal(1);
      expect(failed.err).to.include('set PORT to another one');
      expect(failed.out).to.not.match(/folio_sk_|First start/);
    } finally {
      blocker.close();
    }

    const next = await serveFolio({ FOLIO_DATA_DIR: dataDir() });
    try {
      const output = next.output();
      expect(output).to.include('First start: created a dev account');
      const { email, password, key } = devAccount(next);
      expect(email).to.equal('dev@folio.local');

      const login = await fetch(`${next.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: 'dev@folio.local', password }),
      });
      expect(login.status).to.equal(200);
      const created = await fetch(`${next.url}/default/notes`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ title: 'hello' }),
      });
      expect(created.status).to.equal(201);

      // Only hashes are kept: neither secret appears in any file of the data directory.
      for (const name of await readdir(dataDir())) {
        const bytes = await readFile(join(dataDir(), name)).catch(() => Buffer.alloc(0));
        expect(bytes.includes(password), name).to.equal(false);
        expect(bytes.includes(key), name).to.equal(false);
      }
    } finally {
      expect(await stopFolio(next)).to.equal(0);
    }

    // A later start on the same store creates nothing and shows no secret.
    const later = await serveFolio({ FOLIO_DATA_DIR: dataDir() });
    try {
      expect(later.output()).to.not.match(/folio_sk_|First start/);
      expect(later.output()).to.include('Get an API key');
    } finally {
      await stopFolio(later);
    }
  });
});
