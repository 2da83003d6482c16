/**
 * A real HTTP receiver for webhook deliveries on an ephemeral port: records every request with
 * its raw body, and answers as the test tells it (a status per request, optional delay).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fixture } from './fixture.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  // biome-ignore lint/suspicious/noExplicitAny: the delivery body is checked by assertions
  body: any;
  /** The status the receiver answered. */
  status: number;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** Decides the answer for each request (default: 200). */
  respond: (request: Omit<ReceivedRequest, 'status'>) => number;
  /** Milliseconds to wait before answering (default 0). */
  delayMs: number;
  /** Resolves once `count` requests matching `match` have been answered. */
  waitFor(
    count: number,
    match?: (r: ReceivedRequest) => boolean,
    timeoutMs?: number,
  ): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** Waiting for the next request: `next(ms)` resolves at the next `wake()` or after `ms`, whichever is first. */
export class Arrivals {
  readonly #waiters = new Set<() => void>();

  wake(): void {
    for (const wake of this.#waiters) wake();
  }

  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.#waiters.delete(wake);
        resolve();
      };
      this.#waiters.add(wake);
      setTimeout(wake, ms);
    });
  }
}

export async function startReceiver(): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const arrivals = new Arrivals();
  let server: Server;
  const receiver: Receiver = {
    url: '',
    port: 0,
    requests,
    respond: () => 200,
    delayMs: 0,
    async waitFor(count, match = () => true, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      // Each wake looks only at requests that arrived since the last (the log only grows, or is
      // emptied by its owner): a wait for n requests costs O(n), not O(n^2) as a fresh filter of
      // the whole log at every arrival did, which in benches made the receiver, in the same
      // process as the server, the largest cost of a burst.
      let matching: ReceivedRequest[] = [];
      let seen = 0;
      for (;;) {
        if (requests.length < seen) {
          matching = [];
          seen = 0;
        }
        for (; seen < requests.length; seen++) {
          const request = requests[seen] as ReceivedRequest;
          if (match(request)) matching.push(request);
        }
        if (matching.length >= count) return matching;
        if (Date.now() > deadline) {
          throw new Error(`receiver got ${matching.length} matching requests, expected ${count}`);
        }
        await arrivals.next(50);
      }
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown = null;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = rawBody;
      }
      const seen = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body,
        at: Date.now(),
      };
      const status = receiver.respond(seen);
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'text/plain' });
        res.end('ok');
        requests.push({ ...seen, status });
        arrivals.wake();
      };
      if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  receiver.port = port;
  receiver.url = `http://127.0.0.1:${port}`;
  return receiver;
}

/** The verification a receiver should do: HMAC-SHA256 of the raw body, compared in constant time. */
export function verifySignature(
  rawBody: string,
  header: string | string[] | undefined,
  secret: string,
): boolean {
  if (typeof header !== 'string') return false;
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Call inside a `describe`: a receiver started before and closed after each test (`each`) or the suite. */
export function useReceiver(per: 'each' | 'suite'): () => Receiver {
  return fixture(per, startReceiver, (receiver) => receiver.close());
}
