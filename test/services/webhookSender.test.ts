/**
 * One webhook attempt against real local HTTP servers: the address check at connection time
 * (after DNS), no redirects, the time limit, and bounded reading of the answer.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { WebhookSender } from '../../src/services/webhooks/sender.js';

interface Local {
  url: string;
  hits: () => number;
  close(): Promise<void>;
}

async function serve(handler: (res: import('node:http').ServerResponse) => void): Promise<Local> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits += 1;
    req.resume();
    handler(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const OPTIONS = { timeoutMs: 1000, maxResponseBytes: 1024 };

describe('webhook sender', () => {
  it('refuses, at connection time, a host name that resolves to a loopback address', async () => {
    const local = await serve((res) => res.end('ok'));
    const sender = new WebhookSender(false, 'test');
    try {
      const port = new URL(local.url).port;
      const byName = await sender.send(`http://localhost:${port}/x`, '{}', {}, OPTIONS);
      expect(byName).to.include({ ok: false, statusCode: null });
      expect(byName.error).to.match(
        /^refused target: the host localhost resolved to (127\.0\.0\.1|::1), a private/,
      );
      const literal = await sender.send(`${local.url}/x`, '{}', {}, OPTIONS);
      expect(literal.error).to.match(/^refused target/);
      expect(local.hits()).to.equal(0);
    } finally {
      await sender.close();
      await local.close();
    }
  });

  it('refuses, at connection time, IPv6 forms that embed a loopback address', async () => {
    const local = await serve((res) => res.end('ok'));
    const sender = new WebhookSender(false, 'test');
    try {
      const port = new URL(local.url).port;
      for (const host of [
        '[::ffff:0:7f00:1]',
        '[::127.0.0.1]',
        '[::ffff:127.0.0.1]',
        '[64:ff9b:1::7f00:1]',
        '[2002:7f00:1::1]',
      ]) {
        const outcome = await sender.send(`http://${host}:${port}/x`, '{}', {}, OPTIONS);
        expect(outcome.error, host).to.match(/^refused target/);
      }
      expect(local.hits()).to.equal(0);
    } finally {
      await sender.close();
      await local.close();
    }
  });

  it('does not follow a redirect: a 3xx is a failed attempt', async () => {
    const target = await serve((res) => res.end('ok'));
    const redirect = await serve((res) => {
      res.writeHead(307, { location: `${target.url}/elsewhere` });
      res.end();
    });
    const sender = new WebhookSender(true, 'test');
    try {
      const outcome = await sender.send(`${redirect.url}/x`, '{}', {}, OPTIONS);
      expect(outcome).to.include({ ok: false, statusCode: 307, error: 'HTTP 307' });
      expect(target.hits()).to.equal(0);
    } finally {
      await sender.close();
      await redirect.close();
      await target.close();
    }
  });

  it('gives up after the timeout, and reads an endless answer only up to the limit', async () => {
    const slow = await serve((res) => setTimeout(() => res.end('late'), 3000));
    // An answer that never ends: only a bounded read can finish (else: timeout).
    const endless = await serve((res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024, 97);
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) {}
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    const sender = new WebhookSender(true, 'test');
    try {
      const late = await sender.send(`${slow.url}/x`, '{}', {}, { ...OPTIONS, timeoutMs: 200 });
      expect(late).to.include({ ok: false, statusCode: null, error: 'timeout' });
      expect(late.durationMs).to.be.below(2000);
      const big = await sender.send(`${endless.url}/x`, '{}', {}, OPTIONS);
      expect(big).to.include({ ok: true, statusCode: 200, error: null });
    } finally {
      await sender.close();
      await slow.close();
      await endless.close();
    }
  });
});
