/** Reading the rest of a refused request body, within bounds (src/http/requestDrain.ts). */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { drainRequest } from '../../src/http/requestDrain.js';

/** A server that drains each body with the given bounds and answers whether it got to the end. */
async function drainingServer(maxBytes: number, maxMs: number): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    void drainRequest(req, maxBytes, maxMs).then((drained) => {
      res.setHeader('Connection', 'close');
      res.end(JSON.stringify({ drained }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Sends `chunks`, `gapMs` apart; resolves with the answer (or the error) once the server answered. */
function send(url: string, chunks: Buffer[], gapMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST' }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c;
      });
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    let i = 0;
    const next = () => {
      if (i === chunks.length) return void req.end();
      req.write(chunks[i++]);
      setTimeout(next, gapMs);
    };
    next();
  });
}

/**
 * `[rule, maxBytes, maxMs, chunkBytes, gapMs, drained]`: five chunks of `chunkBytes` sent `gapMs`
 * apart to a server that drains within `maxBytes` and `maxMs`; whether it read to the end.
 */
const CASES = [
  [
    'reads the rest of a body within bounds to its end, so the client can read the answer',
    1_000_000,
    2000,
    100_000,
    5,
    true,
  ],
  ['stops reading past the byte bound', 150_000, 2000, 100_000, 20, false],
  ['stops waiting past the time bound', 1_000_000, 100, 10, 60, false],
] as const;

describe('draining a refused request body', () => {
  for (const [rule, maxBytes, maxMs, chunkBytes, gapMs, drained] of CASES) {
    it(rule, async () => {
      const { server, url } = await drainingServer(maxBytes, maxMs);
      try {
        const answer = await send(
          url,
          Array.from({ length: 5 }, () => Buffer.alloc(chunkBytes, 1)),
          gapMs,
        );
        expect(JSON.parse(answer)).to.deep.equal({ drained });
      } finally {
        server.close();
      }
    });
  }
});
