/**
 * `folio serve` with an open change stream: SIGTERM ends the stream with a final event and the
 * process exits at once, not after the next heartbeat (set to a minute here).
 */
import { once } from 'node:events';
import { expect } from 'chai';
import { devAccount, serveFolio } from '../support/folioProcess.js';
import { StreamClient } from '../support/sse.js';
import { tempDir } from '../support/tempDir.js';

describe('folio serve: SIGTERM with open change streams', function () {
  this.timeout(60_000);
  const dataDir = tempDir('folio-sigterm-', 'suite');

  it('closes the streams with stream.closed (shutdown) and exits 0 well before a heartbeat', async () => {
    const started = await serveFolio({ FOLIO_DATA_DIR: dataDir(), FOLIO_STREAMS_HEARTBEAT_MS: '60000' });
    const { child, url } = started;
    const { key, email, password } = devAccount(started);
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
