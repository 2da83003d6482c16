/**
 * `folio serve` with an open change stream: SIGTERM ends the stream with a final event and the
 * process exits at once, not after the next heartbeat (set to a minute here).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { StreamClient } from '../support/sse.js';

describe('folio serve: SIGTERM with open change streams', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-sigterm-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('closes the streams with stream.closed (shutdown) and exits 0 well before a heartbeat', async () => {
    const child = spawn(process.execPath, ['bin/folio.js', 'serve'], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        FOLIO_DATA_DIR: dataDir,
        FOLIO_LOG_LEVEL: 'silent',
        FOLIO_STREAMS_HEARTBEAT_MS: '60000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const deadline = Date.now() + 20_000;
    while (!/API key:\s+(\S+)/.test(out)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`folio did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const url = /listening on (\S+)/.exec(out)![1]!;
    const key = /API key:\s+(\S+)/.exec(out)![1]!;
    const [email, password] = /login:\s+(\S+) \/ (\S+)/.exec(out)!.slice(1);
    const login = await fetch(`${url}/api/auth/login`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const { token } = (await login.json()) as { token: string };
    const plan = await fetch(`${url}/api/account`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
      body: JSON.stringify({ plan: 'pro' }),
    });
    expect(plan.status).to.equal(200);
    const client = new StreamClient(`${url}/default/notes/_stream`, key);
    try {
      await client.opened;
      const exited = once(child, 'exit');
      const started = Date.now();
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).to.equal(0);
      expect(Date.now() - started).to.be.below(5000);
      const closed = await client.next(['stream.closed'], 1000);
      expect(closed.data.reason).to.equal('shutdown');
    } finally {
      client.close();
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
