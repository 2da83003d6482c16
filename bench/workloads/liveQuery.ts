/**
 * Write-to-event latency beside Parse Server's live queries: the same number of subscribers
 * on each (Folio: SSE on `GET /{ns}/{collection}/_stream`, one per key of the pool; Parse: a
 * WebSocket live-query subscription on its `Item` class), the same paced creates, and for each
 * (write, subscriber) the time from just before the write was sent to the event's arrival.
 * Subscribers and writer share this process, so both sides pay the same client costs.
 *
 * Parse's WebSocket client is the `ws` package Parse Server itself installs (in the bench's
 * temporary folder): nothing here is a dependency of Folio.
 */

import { request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { percentile } from '../stats.js';
import { PARSE_HEADERS } from './parseServer.js';

export const LIVE_SUBSCRIBERS = Number(process.env.PEERS_LIVE_SUBSCRIBERS ?? 100);
const WRITES = Number(process.env.PEERS_LIVE_WRITES ?? 100);
const PACE_MS = 20;
const OPEN_TIMEOUT_MS = 20_000;

export interface LiveLatency {
  subscribers: number;
  writes: number;
  p50Ms: number;
  p99Ms: number;
  /** Arrivals that never came within the wait after the last write (should be 0). */
  missing: number;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** Paced writes; `arrived(w)` resolves the per-write latencies as subscribers report them. */
async function paced(
  write: (w: number) => Promise<void>,
  arrivals: Map<number, number[]>,
  sent: Map<number, number>,
  subscribers: number,
): Promise<LiveLatency> {
  for (let w = 0; w < WRITES; w++) {
    sent.set(w, nowMs());
    await write(w);
    await new Promise((r) => setTimeout(r, PACE_MS));
  }
  const deadline = Date.now() + 10_000;
  const complete = () => [...arrivals.values()].reduce((n, a) => n + a.length, 0) >= WRITES * subscribers;
  while (!complete() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const latencies = [...arrivals.values()].flat().sort((a, b) => a - b);
  return {
    subscribers,
    writes: WRITES,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    missing: WRITES * subscribers - latencies.length,
  };
}

function record(arrivals: Map<number, number[]>, sent: Map<number, number>, w: unknown): void {
  if (typeof w !== 'number' || !sent.has(w)) return;
  const list = arrivals.get(w) ?? [];
  list.push(nowMs() - (sent.get(w) as number));
  arrivals.set(w, list);
}

/** Folio: one SSE subscriber per key of `keys` on `collection`, then paced creates into it. */
export async function folioLiveLatency(
  url: string,
  project: string,
  keys: readonly string[],
  collection: string,
): Promise<LiveLatency> {
  const arrivals = new Map<number, number[]>();
  const sent = new Map<number, number>();
  const closers: Array<() => void> = [];
  const count = Math.min(LIVE_SUBSCRIBERS, keys.length);
  try {
    await Promise.all(
      keys.slice(0, count).map(
        (key) =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(() => reject(new Error('Folio stream did not open')), OPEN_TIMEOUT_MS);
            const req = request(
              `${url}/${project}/${collection}/_stream`,
              { headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}` } },
              (res) => {
                if (res.statusCode !== 200) return reject(new Error(`Folio stream: ${res.statusCode}`));
                clearTimeout(timer);
                resolve();
                const parser = createParser({
                  onEvent: (event) => {
                    if (!event.data) return;
                    record(
                      arrivals,
                      sent,
                      (JSON.parse(event.data) as { document?: { w?: unknown } }).document?.w,
                    );
                  },
                });
                res.setEncoding('utf8');
                res.on('data', (chunk: string) => parser.feed(chunk));
                res.on('error', () => {});
              },
            );
            req.on('error', reject);
            req.end();
            closers.push(() => req.destroy());
          }),
      ),
    );
    const writer = keys[0] as string;
    return await paced(
      async (w) => {
        const res = await fetch(`${url}/${project}/${collection}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${writer}` },
          body: JSON.stringify({ w, title: 'live' }),
        });
        if (res.status !== 201) throw new Error(`Folio write: ${res.status}`);
        await res.arrayBuffer();
      },
      arrivals,
      sent,
      count,
    );
  } finally {
    for (const close of closers) close();
  }
}

interface WebSocketLike {
  on(event: 'open' | 'message' | 'error', listener: (data: Buffer) => void): void;
  send(data: string): void;
  close(): void;
}

/** Parse Server: one live-query WebSocket per subscriber on `Item`, then paced creates. */
export async function parseLiveLatency(dir: string, parseUrl: string, appId: string): Promise<LiveLatency> {
  const requireFromParse = createRequire(join(dir, 'parse-server/node_modules/parse-server/package.json'));
  const WebSocket = requireFromParse('ws') as new (url: string) => WebSocketLike;
  const wsUrl = parseUrl.replace(/^http/, 'ws');
  const arrivals = new Map<number, number[]>();
  const sent = new Map<number, number>();
  const sockets: WebSocketLike[] = [];
  try {
    await Promise.all(
      Array.from(
        { length: LIVE_SUBSCRIBERS },
        () =>
          new Promise<void>((resolve, reject) => {
            const timer = setTimeout(
              () => reject(new Error('Parse live query did not subscribe')),
              OPEN_TIMEOUT_MS,
            );
            const socket = new WebSocket(wsUrl);
            sockets.push(socket);
            socket.on('error', () => reject(new Error('Parse live query socket failed')));
            socket.on('open', () => socket.send(JSON.stringify({ op: 'connect', applicationId: appId })));
            socket.on('message', (data) => {
              const message = JSON.parse(data.toString()) as { op: string; object?: { w?: unknown } };
              if (message.op === 'connected')
                socket.send(
                  JSON.stringify({
                    op: 'subscribe',
                    requestId: 1,
                    query: { className: 'Item', where: { title: 'live' } },
                  }),
                );
              else if (message.op === 'subscribed') {
                clearTimeout(timer);
                resolve();
              } else if (message.op === 'create') record(arrivals, sent, message.object?.w);
            });
          }),
      ),
    );
    return await paced(
      async (w) => {
        const res = await fetch(`${parseUrl}/classes/Item`, {
          method: 'POST',
          headers: PARSE_HEADERS,
          body: JSON.stringify({ w, title: 'live' }),
        });
        if (res.status !== 201) throw new Error(`Parse write: ${res.status}`);
        await res.arrayBuffer();
      },
      arrivals,
      sent,
      LIVE_SUBSCRIBERS,
    );
  } finally {
    for (const socket of sockets) socket.close();
  }
}

export function liveTable(folio: LiveLatency | null, parse: LiveLatency | null): string[] {
  const row = (name: string, l: LiveLatency | null) =>
    l
      ? `| ${name} | ${l.subscribers} | ${l.writes} | ${l.p50Ms.toFixed(1)} | ${l.p99Ms.toFixed(1)} | ${l.missing} |`
      : `| ${name} | n/a | n/a | n/a | n/a | n/a |`;
  return [
    '| system | subscribers | writes (every 20 ms) | write to event p50 ms | p99 ms | events missing |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    row('Folio (SSE)', folio),
    row('Parse Server (live query, WebSocket)', parse),
  ];
}
