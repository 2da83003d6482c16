/**
 * One load-generator process of the change-stream benchmark (forked by bench/streams.ts, which
 * runs the server and forks several of these). Each holds its share of the SSE subscribers and
 * timestamps every event's arrival; the first one also makes the writes.
 *
 * The subscribers read the stream over `node:http` and parse it with `eventsource-parser` (the
 * SSE parser the `eventsource` package itself is built on). The full `eventsource` client reads
 * through fetch and WHATWG streams: about ten times the CPU per event, so a thousand of them in
 * one process measured the client's own backlog, not the server (see docs/streams.md).
 *
 * Times are `process.hrtime` readings: the machine's monotonic clock, the same in every process
 * of one machine, so the parent subtracts a write's send time (this process or another) from an
 * arrival time directly.
 */
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { createParser } from 'eventsource-parser';

export type ClientMessage =
  | {
      type: 'open';
      url: string;
      key: string;
      project: string;
      /** The collection index of each subscriber this process holds. */
      collections: number[];
    }
  | { type: 'arm'; writes: number; collections: number }
  | { type: 'write'; w: number; collection: number }
  | { type: 'report' }
  | { type: 'close' };

export type GeneratorMessage =
  | { type: 'opened' }
  | { type: 'armed' }
  /** Write `w` was sent at `sentMs` and acknowledged (201) at `ackMs`. */
  | { type: 'written'; w: number; sentMs: number; ackMs: number }
  /** Every subscriber of this process got write `w`'s event (sent only where some watch it). */
  | { type: 'received'; w: number }
  /** Arrivals as flat pairs [w, ms, w, ms, ...]; event-loop utilisation since `arm`. */
  | { type: 'report'; arrivals: number[]; utilization: number }
  | { type: 'closed' }
  | { type: 'error'; message: string };

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

function send(message: GeneratorMessage): void {
  process.send?.(message);
}

interface Subscriber {
  collection: number;
  close(): void;
}

let subscribers: Subscriber[] = [];
let target: { url: string; key: string; project: string } | null = null;
/** Write number → receipts still due in this process. */
const due = new Map<number, number>();
let arrivals: number[] = [];
let since = performance.eventLoopUtilization();

function receive(w: number, at: number): void {
  const left = due.get(w);
  if (left === undefined) return;
  arrivals.push(w, at);
  if (left > 1) {
    due.set(w, left - 1);
    return;
  }
  due.delete(w);
  send({ type: 'received', w });
}

function subscribe(url: string, key: string, collection: number): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const parser = createParser({
      onEvent(event) {
        if (event.event !== 'document.created') return;
        const at = nowMs();
        const { document } = JSON.parse(event.data) as { document: { w: number } };
        receive(document.w, at);
      },
    });
    const req = request(url, {
      agent: false,
      headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}` },
    });
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`subscriber got ${res.statusCode}`));
        res.resume();
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => parser.feed(chunk));
      res.on('error', () => {});
      resolve({ collection, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

async function write(w: number, collection: number): Promise<GeneratorMessage> {
  if (!target) throw new Error('open first');
  const sentMs = nowMs();
  const res = await fetch(`${target.url}/${target.project}/bench${collection}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${target.key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ w, payload: 'x'.repeat(200) }),
  });
  const ackMs = nowMs();
  await res.arrayBuffer();
  if (res.status !== 201) throw new Error(`write ${w}: ${res.status}`);
  return { type: 'written', w, sentMs, ackMs };
}

async function handle(message: ClientMessage): Promise<GeneratorMessage | null> {
  switch (message.type) {
    case 'open': {
      target = message;
      const opening: Promise<Subscriber>[] = [];
      for (const collection of message.collections) {
        opening.push(
          subscribe(`${message.url}/${message.project}/bench${collection}/_stream`, message.key, collection),
        );
        // Open in small waves: a thousand simultaneous connects would only measure the backlog.
        if (opening.length % 50 === 0) await Promise.all(opening.slice(-50));
      }
      subscribers = await Promise.all(opening);
      return { type: 'opened' };
    }
    case 'arm': {
      // Set every write's expected receipts before the first write: a receipt never races it.
      due.clear();
      arrivals = [];
      const perCollection = new Map<number, number>();
      for (const s of subscribers)
        perCollection.set(s.collection, (perCollection.get(s.collection) ?? 0) + 1);
      for (let w = 0; w < message.writes; w++) {
        const count = perCollection.get(w % message.collections) ?? 0;
        if (count > 0) due.set(w, count);
      }
      since = performance.eventLoopUtilization();
      return { type: 'armed' };
    }
    case 'write':
      return write(message.w, message.collection);
    case 'report':
      return {
        type: 'report',
        arrivals,
        utilization: performance.eventLoopUtilization(since).utilization,
      };
    case 'close':
      for (const s of subscribers) s.close();
      subscribers = [];
      return { type: 'closed' };
  }
}

process.on('message', (message: ClientMessage) => {
  handle(message).then(
    (reply) => {
      if (reply) send(reply);
    },
    (error: unknown) => send({ type: 'error', message: String(error) }),
  );
});
// Exit normally when the bench ends this process, so `--cpu-prof` can write its profile.
process.on('SIGTERM', () => process.exit(0));
