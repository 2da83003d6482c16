/**
 * The address a delivery actually dials is checked when it connects, through the server's
 * name resolution (injected here, the system resolver in production): names that look
 * ordinary at registration and resolve to loopback, link-local or an IPv6 form embedding
 * loopback at send time are refused with the address in the reason, and nothing reaches the
 * real receiver listening there. With private targets allowed, the same path delivers.
 */

import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { expect } from 'chai';
import { refuseForbiddenSocket } from '../../src/services/webhooks/sender.js';
import type { HostLookup } from '../../src/services/webhooks/targets.js';
import { useReceiver, verifySignature } from '../support/receiver.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/timeout.js';

/** A resolver the test controls: each name answers what the map holds at that moment. */
function fakeDns() {
  const names = new Map<string, string>();
  const lookup: HostLookup = async (hostname) => {
    const address = names.get(hostname);
    if (address === undefined) {
      const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
      error.code = 'ENOTFOUND';
      throw error;
    }
    return [{ address, family: address.includes(':') ? 6 : 4 } satisfies LookupAddress];
  };
  return { names, lookup };
}

const PUBLIC = '93.184.216.34';
const CONFIG = (allowPrivateTargets: boolean) => ({
  // Retries far away: each test looks at the first attempt only.
  webhooks: { allowPrivateTargets, backoffBaseMs: 600_000, pollMs: 40, timeoutMs: 2000 },
});

async function register(server: TestServer, tenant: Tenant, url: string) {
  return server.request('POST', `/${tenant.project}/orders/_webhooks`, {
    key: tenant.key,
    body: { url, events: ['document.created'] },
  });
}

async function firstAttemptError(server: TestServer, tenant: Tenant, hookId: string): Promise<string> {
  return eventually(async () => {
    const res = await server.request('GET', `/${tenant.project}/orders/_webhooks/${hookId}`, {
      key: tenant.key,
    });
    const attempt = res.body.deliveries?.[0]?.attempts?.[0];
    if (!attempt) throw new Error('no attempt recorded yet');
    return attempt.error as string;
  });
}

describe('webhooks: the address dialled is checked at connection time', () => {
  const receiver = useReceiver('suite');

  describe('private targets not allowed', () => {
    const dns = fakeDns();
    let server: TestServer;
    let tenant: Tenant;
    before(async () => {
      server = await startTestServer({ config: CONFIG(false), lookup: dns.lookup });
      tenant = await server.tenant({ plan: 'team' });
    });
    after(async () => {
      await server.close();
    });

    it('resolves names at registration through the same resolver', async () => {
      dns.names.set('loop.example.test', '127.0.0.1');
      const refused = await register(server, tenant, `http://loop.example.test:${receiver().port}/in`);
      expect(refused.status).to.equal(400);
      expect(refused.body.error.message).to.match(/loop\.example\.test resolves to a private/);
      const unknown = await register(server, tenant, 'http://nowhere.example.test/in');
      expect(unknown.status).to.equal(400);
      expect(unknown.body.error.message).to.match(/nowhere\.example\.test does not resolve/);
    });

    for (const address of ['127.0.0.1', '::1', '::ffff:7f00:1', '64:ff9b::7f00:1', '169.254.169.254']) {
      it(`refuses at send a name that resolved publicly at registration and now resolves to ${address}`, async () => {
        const host = `h${address.replace(/[^0-9a-f]/g, '')}.example.test`;
        dns.names.set(host, PUBLIC);
        const hook = await register(server, tenant, `http://${host}:${receiver().port}/in`);
        expect(hook.status, hook.text).to.equal(201);
        dns.names.set(host, address);
        const before = receiver().requests.length;
        const write = await server.request('POST', `/${tenant.project}/orders`, {
          key: tenant.key,
          body: { host },
        });
        expect(write.status).to.equal(201);
        const error = await firstAttemptError(server, tenant, hook.body.id);
        expect(error).to.equal(
          `refused target: the host ${host} resolved to ${address}, a private, loopback or link-local address`,
        );
        expect(receiver().requests.length).to.equal(before);
        // Later deliveries of this webhook are not ours to count.
        await server.request('PATCH', `/${tenant.project}/orders/_webhooks/${hook.body.id}`, {
          key: tenant.key,
          body: { status: 'disabled' },
        });
      });
    }

    it('refuses the test endpoint too when the name rebinds to loopback', async () => {
      const host = 'rebind.example.test';
      dns.names.set(host, PUBLIC);
      const hook = await register(server, tenant, `http://${host}:${receiver().port}/in`);
      expect(hook.status).to.equal(201);
      dns.names.set(host, '127.0.0.1');
      const test = await server.request('POST', `/${tenant.project}/orders/_webhooks/${hook.body.id}/test`, {
        key: tenant.key,
      });
      expect(test.status).to.equal(200);
      expect(test.body.status).to.equal('failed');
      expect(test.body.attempts[0].error).to.equal(
        `refused target: the host ${host} resolved to 127.0.0.1, a private, loopback or link-local address`,
      );
      expect(receiver().requests.filter((r) => r.path === '/in')).to.have.length(0);
    });
  });

  describe('private targets allowed', () => {
    const dns = fakeDns();
    let server: TestServer;
    after(async () => {
      await server?.close();
    });

    it('delivers through the injected resolution to the real local receiver', async () => {
      server = await startTestServer({ config: CONFIG(true), lookup: dns.lookup });
      const tenant = await server.tenant();
      dns.names.set('hooks.example.test', '127.0.0.1');
      const hook = await register(server, tenant, `http://hooks.example.test:${receiver().port}/ok`);
      expect(hook.status).to.equal(201);
      await server.request('POST', `/${tenant.project}/orders`, { key: tenant.key, body: { ok: true } });
      const [got] = await receiver().waitFor(1, (r) => r.path === '/ok');
      expect(got!.headers.host).to.equal(`hooks.example.test:${receiver().port}`);
      expect(verifySignature(got!.rawBody, got!.headers['x-service-signature'], hook.body.secret)).to.equal(
        true,
      );
    });
  });

  it('closes a socket connected to a forbidden address before anything is sent', async () => {
    let received = 0;
    const local: Server = createServer((_req, res) => {
      received += 1;
      res.end();
    });
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const socket: Socket = connect((local.address() as AddressInfo).port, '127.0.0.1');
    try {
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      const refused = refuseForbiddenSocket(socket);
      expect(refused?.message).to.equal('connected to 127.0.0.1, a private, loopback or link-local address');
      expect(socket.destroyed).to.equal(true);
      expect(received).to.equal(0);
      expect(refuseForbiddenSocket({ remoteAddress: PUBLIC, destroy: () => socket })).to.equal(null);
    } finally {
      local.close();
    }
  });
});
