/**
 * The change-stream benchmark's load generator, in its own process (forked by bench/streams.ts):
 * it holds the SSE subscribers (the `eventsource` client), makes the writes over HTTP, and
 * measures from just before each write to each subscriber's receipt of its event. Both
 * processes read the same monotonic clock only through their own differences, so no clock is
 * shared.
 */
import { EventSource } from 'eventsource';

export type ClientMessage =
  | { type: 'open'; url: string; key: string; project: string; subscribers: number; collections: number }
  | { type: 'run'; writes: number }
  | { type: 'close' };

export type GeneratorMessage =
  | { type: 'opened' }
  | { type: 'done'; latenciesMs: number[] }
  | { type: 'closed' }
  | { type: 'error'; message: string };

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

let sources: EventSource[] = [];
let target: { url: string; key: string; project: string; collections: number } | null = null;
/** Write number → when it was issued and how many receipts are still due. */
const pending = new Map<number, { t0: number; due: number; done: () => void }>();
const latencies: number[] = [];

function subscribe(url: string, key: string): Promise<EventSource> {
  const source = new EventSource(url, {
    fetch: (input, init) => {
      const headers = new Headers(init.headers);
      headers.set('Authorization', `Bearer ${key}`);
      return fetch(input, { ...init, headers });
    },
  });
  source.addEventListener('document.created', (e: MessageEvent) => {
    const at = nowMs();
    const { document } = JSON.parse(e.data as string) as { document: { w: number } };
    const entry = pending.get(document.w);
    if (!entry) return;
    latencies.push(at - entry.t0);
    entry.due -= 1;
    if (entry.due === 0) {
      pending.delete(document.w);
      entry.done();
    }
  });
  return new Promise((resolve, reject) => {
    source.addEventListener('open', () => resolve(source), { once: true });
    source.addEventListener('error', (e) => reject(new Error(`subscriber failed: ${JSON.stringify(e)}`)), {
      once: true,
    });
  });
}

async function handle(message: ClientMessage): Promise<GeneratorMessage> {
  switch (message.type) {
    case 'open': {
      target = message;
      const opening: Promise<EventSource>[] = [];
      for (let i = 0; i < message.subscribers; i++) {
        const collection = `bench${i % message.collections}`;
        opening.push(subscribe(`${message.url}/${message.project}/${collection}/_stream`, message.key));
        // Open in small waves: a thousand simultaneous connects would only measure the backlog.
        if (opening.length % 50 === 0) await Promise.all(opening.slice(-50));
      }
      sources = await Promise.all(opening);
      return { type: 'opened' };
    }
    case 'run': {
      if (!target) throw new Error('open first');
      latencies.length = 0;
      for (let w = 0; w < message.writes; w++) {
        const c = w % target.collections;
        // Subscriber i watches collection i % collections.
        const due =
          Math.floor(sources.length / target.collections) + (c < sources.length % target.collections ? 1 : 0);
        if (due === 0) continue;
        const collection = `bench${c}`;
        const received = new Promise<void>((done) => pending.set(w, { t0: nowMs(), due, done }));
        const res = await fetch(`${target.url}/${target.project}/${collection}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${target.key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ w, payload: 'x'.repeat(200) }),
        });
        if (res.status !== 201) throw new Error(`write ${w}: ${res.status}`);
        await res.arrayBuffer();
        await received;
      }
      return { type: 'done', latenciesMs: [...latencies] };
    }
    case 'close':
      for (const source of sources) source.close();
      sources = [];
      return { type: 'closed' };
  }
}

process.on('message', (message: ClientMessage) => {
  handle(message).then(
    (reply) => process.send?.(reply),
    (error: unknown) => process.send?.({ type: 'error', message: String(error) } satisfies GeneratorMessage),
  );
});
