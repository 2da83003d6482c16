import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { type RunningServer, startServer } from '../../src/server.js';
import { runFolio } from '../support/cli.js';
import { tempDir } from '../support/tempDir.js';

/** The operator CLI on `dataDir` (`command`: its words, split at spaces), with signup closed. */
function folio(dataDir: string, command: string) {
  return runFolio(command.split(' '), {
    FOLIO_DATA_DIR: dataDir,
    FOLIO_AUTH_SIGNUP: 'closed',
    FOLIO_LOG_LEVEL: 'silent',
  });
}

describe('folio account|project|key create (operator CLI)', function () {
  this.timeout(60_000);
  let server: RunningServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });
  // A store of its own for each test: none may rely on accounts another test created.
  const dataDir = tempDir('folio-admin-');

  it('creates an account, a project and a key even with signup closed; the key and password work', async () => {
    const account = await folio(dataDir(), 'account create --email Ops@Example.test --plan pro');
    expect(account.code, account.err).to.equal(0);
    expect(account.out).to.match(/^account acc_\S+ ops@example\.test \(pro\)/);
    const password = /password: (\S+)/.exec(account.out)?.[1] as string;
    expect(password).to.be.a('string');
    expect((await folio(dataDir(), 'project create --email ops@example.test --name shop')).code).to.equal(0);
    const key = await folio(dataDir(), 'key create --email ops@example.test --project shop --env live');
    expect(key.code, key.err).to.equal(0);
    const rawKey = /(folio_sk_live_[0-9A-Za-z]{40})/.exec(key.out)?.[1] as string;
    expect(rawKey).to.be.a('string');

    const config = loadConfig(
      {},
      { dataDir: dataDir(), port: 0, host: '127.0.0.1', logLevel: 'silent', auth: { signup: 'closed' } },
    );
    server = await startServer(config);
    const doc = await fetch(`${server.url}/shop/orders`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${rawKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ total: 3 }),
    });
    expect(doc.status).to.equal(201);
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'ops@example.test', password }),
    });
    expect(login.status).to.equal(200);
    expect(server.bootstrap, 'an existing account means no dev bootstrap').to.equal(null);
  });

  it('key create --rules and key rules --rules-file set a key’s rules; a bad rule exits 2', async () => {
    expect((await folio(dataDir(), 'account create --email ops@example.test')).code).to.equal(0);
    expect((await folio(dataDir(), 'project create --email ops@example.test --name shop')).code).to.equal(0);
    const created = await runFolio(
      [
        'key',
        'create',
        '--email',
        'ops@example.test',
        '--project',
        'shop',
        '--rules',
        '[{"collections":["posts"],"access":"read"}]',
      ],
      { FOLIO_DATA_DIR: dataDir(), FOLIO_LOG_LEVEL: 'silent' },
    );
    expect(created.code, created.err).to.equal(0);
    expect(created.out).to.include('with rules [{"collections":["posts"],"access":"read"}]');
    const id = /^key (key_\S+)/.exec(created.out)?.[1] as string;
    const file = join(dataDir(), 'rules.json');
    writeFileSync(file, '[{"collections":["public_*"],"access":"write","filter":{"published":true}}]');
    const changed = await folio(
      dataDir(),
      `key rules --email ops@example.test --key ${id} --rules-file ${file}`,
    );
    expect(changed.code, changed.err).to.equal(0);
    expect(changed.out).to.include('"filter":{"published":true}');
    writeFileSync(file, '[{"collections":["pub*"],"access":"write","filter":{"n":{"near":1}}}]');
    const bad = await folio(dataDir(), `key rules --email ops@example.test --key ${id} --rules-file ${file}`);
    expect(bad.code).to.equal(2);
    expect(bad.err).to.include('rules');
  });

  it('bad input exits non-zero with a message', async () => {
    // An existing account and project, so the bad --env and the missing --name are what fail.
    const account = await folio(dataDir(), 'account create --email ops@example.test');
    expect(account.code, account.err).to.equal(0);
    const project = await folio(dataDir(), 'project create --email ops@example.test --name shop');
    expect(project.code, project.err).to.equal(0);
    const noAccount = await folio(dataDir(), 'key create --email nobody@example.test --project shop');
    expect(noAccount.code).to.equal(2);
    expect(noAccount.err).to.include('no account with email nobody@example.test');
    const badEnv = await folio(dataDir(), 'key create --email ops@example.test --project shop --env prod');
    expect(badEnv.code).to.equal(2);
    expect(badEnv.err).to.include('env');
    const missing = await folio(dataDir(), 'project create --email ops@example.test');
    expect(missing.code).to.equal(2);
    const unknown = await folio(dataDir(), 'key destroy');
    expect(unknown.code).to.equal(2);
  });
});
