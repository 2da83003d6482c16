/**
 * Change streams in `npm run bench`: write-to-event latency (p50/p99) with 1 and 1,000 concurrent
 * SSE subscribers, spread over 1 and over 100 collections, and the server's memory per idle
 * stream. The server runs here (embedded store) and besides serving only relays a few IPC
 * messages per write; the subscribers and the writer run in forked load-generator processes
 * (bench/streamClients.ts), so neither competes inside the server's event loop. After each
 * scenario the same clients measure a bare node:http fan-out (bench/bareFanOut.ts): the floor
 * under the machine's load of the moment. Memory: see `measure`; docs/streams.md says how to
 * read both.
 *
 * Latency of an event = its arrival at a subscriber (parsed by the SSE parser) minus the time
 * its write was SENT (just before the POST), so it includes the write's own round trip. Writes
 * go one at a time: the next is sent once every subscriber got the previous one. The first
 * writes of each scenario warm up and are not counted.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../test/support/server.js';
import { startBareFanOut } from './bareFanOut.js';
import { percentile } from './stats.js';
import type { ClientMessage, GeneratorMessage } from './streamClients.js';
import { sized } from './workloads/rows.js';

const SUBSCRIBERS = sized(1000, 50);
const WRITES = sized(200, 20);
/** Load-generator processes. */
const PROCESSES = 2;
const WARM_UP = 10;
/** A write whose events are not all in by then fails the run instead of hanging it. */
const WRITE_TIMEOUT_MS = 30_000;

type Reply<T extends GeneratorMessage['type']> = Extract<GeneratorMessage, { type: T }>;

/** One forked load generator, with a promise per awaited message. */
class Generator {
  readonly #child: ChildProcess;
  readonly #waiting = new Map<string, { resolve(m: GeneratorMessage): void; reject(e: Error): void }>();

  constructor() {
    this.#child = fork(fileURLToPath(new URL('./streamClients.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
    });
    this.#child.on('message', (message: GeneratorMessage) => {
      if (message.type === 'error') {
        for (const waiter of this.#waiting.values()) waiter.reject(new Error(message.message));
        this.#waiting.clear();
        return;
      }
      const name = message.type === 'received' ? `received:${message.w}` : message.type;
      const waiter = this.#waiting.get(name);
      this.#waiting.delete(name);
      waiter?.resolve(message);
    });
  }

  /** The next message of `type` (for `received`, the one of write `w`). */
  expect<T extends GeneratorMessage['type']>(type: T, w?: number): Promise<Reply<T>> {
    const name = w === undefined ? type : `${type}:${w}`;
    return new Promise<GeneratorMessage>((resolve, reject) => {
      this.#waiting.set(name, { resolve, reject });
    }) as Promise<Reply<T>>;
  }

  send(message: ClientMessage): void {
    this.#child.send(message);
  }

  async ask<T extends GeneratorMessage['type']>(message: ClientMessage, reply: T): Promise<Reply<T>> {
    const answer = this.expect(reply);
    this.send(message);
    return answer;
  }

  kill(): void {
    this.#child.kill();
  }
}

/** `promise`, or a failure once WRITE_TIMEOUT_MS passed (the timer never keeps the process alive). */
const withTimeout = <T>(promise: Promise<T>, what: string): Promise<T> =>
  Promise.race([
    promise,
    delay(WRITE_TIMEOUT_MS, null, { ref: false }).then(() => {
      throw new Error(`${what}: no answer in ${WRITE_TIMEOUT_MS} ms`);
    }),
  ]);

/** Server memory per idle stream, bytes, after a full GC (see `measure`). */
interface PerStream {
  coldRss: number;
  warmRss: number;
  heap: number;
}

interface Row {
  scenario: string;
  samples: number;
  p50: number;
  p99: number;
  max: number;
  /** The write's own round trip (send to 201), p50. */
  ackP50: number;
  /** Event-loop utilisation during the measured writes: the server's, and the busiest generator's. */
  serverLoad: number;
  clientLoad: number;
}

/**
 * Open `subscribers` streams on `target` (spread over the generators and over `collections`),
 * then write one document at a time and time every event. With `gc`, also the server's memory
 * per idle stream: the difference after a full collection, before and after opening them.
 */
async function measure(
  generators: Generator[],
  target: { url: string; key: string; project: string },
  subscribers: number,
  collections: number,
  memory: { gc(): void; openStreams(): number } | null,
): Promise<{ row: Row; perStream: PerStream | null }> {
  const writer = generators[0] as Generator;
  // Subscriber i: generator i % PROCESSES, collection i % collections.
  const shares = generators.map((_, g) => {
    const share: number[] = [];
    for (let i = g; i < subscribers; i += generators.length) share.push(i % collections);
    return share;
  });
  const open = () =>
    Promise.all(
      generators.map((g, i) => g.ask({ type: 'open', ...target, collections: shares[i] ?? [] }, 'opened')),
    );
  let perStream: PerStream | null = null;
  if (memory) {
    // Cold: the first streams of a fresh server, with what a first use costs once (code, heap
    // spaces growing). Warm: as many again after closing those, so what stayed from the first
    // use is in the baseline and the difference is what open streams hold.
    const settle = async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      memory.gc();
      return process.memoryUsage();
    };
    const cold = await settle();
    await open();
    const coldOpen = await settle();
    await Promise.all(generators.map((g) => g.ask({ type: 'close' }, 'closed')));
    while (memory.openStreams() > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    const warm = await settle();
    await open();
    const warmOpen = await settle();
    perStream = {
      coldRss: (coldOpen.rss - cold.rss) / subscribers,
      warmRss: (warmOpen.rss - warm.rss) / subscribers,
      heap: (warmOpen.heapUsed + warmOpen.external - warm.heapUsed - warm.external) / subscribers,
    };
  } else {
    await open();
  }
  const total = WARM_UP + WRITES;
  await Promise.all(generators.map((g) => g.ask({ type: 'arm', writes: total, collections }, 'armed')));
  const sent = new Map<number, number>();
  const acks: number[] = [];
  let serverLoad = performance.eventLoopUtilization();
  for (let w = 0; w < total; w++) {
    if (w === WARM_UP) serverLoad = performance.eventLoopUtilization();
    const collection = w % collections;
    const receipts = generators
      .filter((_, i) => shares[i]?.includes(collection))
      .map((g) => g.expect('received', w));
    const written = writer.ask({ type: 'write', w, collection }, 'written');
    const [ack] = await withTimeout(Promise.all([written, ...receipts]), `write ${w}`);
    sent.set(w, ack.sentMs);
    if (w >= WARM_UP) acks.push(ack.ackMs - ack.sentMs);
  }
  const serverUtilization = performance.eventLoopUtilization(serverLoad).utilization;
  const reports = await Promise.all(generators.map((g) => g.ask({ type: 'report' }, 'report')));
  const latencies: number[] = [];
  for (const { arrivals } of reports) {
    for (let i = 0; i < arrivals.length; i += 2) {
      const w = arrivals[i] as number;
      if (w >= WARM_UP) latencies.push((arrivals[i + 1] as number) - (sent.get(w) as number));
    }
  }
  latencies.sort((a, b) => a - b);
  acks.sort((a, b) => a - b);
  await Promise.all(generators.map((g) => g.ask({ type: 'close' }, 'closed')));
  return {
    perStream,
    row: {
      scenario: '',
      samples: latencies.length,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies.at(-1) ?? Number.NaN,
      ackP50: percentile(acks, 50),
      serverLoad: serverUtilization,
      clientLoad: Math.max(...reports.map((r) => r.utilization)),
    },
  };
}

export async function runStreamBench(): Promise<void> {
  // A full collection, so memory deltas measure what stays (run.ts starts every part with --expose-gc).
  const gc = global.gc as () => void;
  const server = await startTestServer({
    contract: false,
    config: { streams: { maxPerKey: SUBSCRIBERS + 10, bufferLimit: 10_000 } },
  });
  const generators = Array.from({ length: PROCESSES }, () => new Generator());
  const rows: Row[] = [];
  let perStream: PerStream = { coldRss: 0, warmRss: 0, heap: 0 };
  try {
    const tenant = await server.tenant({ plan: 'pro' });
    const scenarios: Array<[string, number, number]> = [
      ['1 subscriber, 1 collection', 1, 1],
      [`${SUBSCRIBERS} subscribers, 1 collection`, SUBSCRIBERS, 1],
      [`${SUBSCRIBERS} subscribers, 100 collections`, SUBSCRIBERS, 100],
    ];
    const bare = await startBareFanOut();
    try {
      for (const [name, subscribers, collections] of scenarios) {
        const folio = { url: server.url, key: tenant.key, project: tenant.project };
        const memory = subscribers === SUBSCRIBERS && collections === 1;
        const idle = { gc, openStreams: () => server.running.services.streams.openCount };
        const measured = await measure(generators, folio, subscribers, collections, memory ? idle : null);
        if (measured.perStream) perStream = measured.perStream;
        rows.push({ ...measured.row, scenario: `Folio: ${name}` });
        // The same clients against the bare floor, right after, under the same machine load.
        const floor = { url: bare.url, key: 'none', project: 'bare' };
        rows.push({
          ...(await measure(generators, floor, subscribers, collections, null)).row,
          scenario: `bare floor: ${name}`,
        });
      }
    } finally {
      await bare.close();
    }
  } finally {
    for (const g of generators) g.kill();
    await server.close();
  }
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const pct = (x: number) => `${Math.round(x * 100)} %`;
  process.stdout.write(
    `${WRITES} writes per scenario, ${PROCESSES} load-generator processes. Latency from sending the write to each subscriber parsing its event; ` +
      "write ms: the write's own round trip, p50; server, clients: event-loop utilisation of the server and of the busiest load generator.\n\n" +
      '| scenario | events | p50 ms | p99 ms | max ms | write ms | server | clients |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n' +
      rows
        .map(
          (r) =>
            `| ${r.scenario} | ${r.samples} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.max.toFixed(2)} | ${r.ackP50.toFixed(2)} | ${pct(r.serverLoad)} | ${pct(r.clientLoad)} |\n`,
        )
        .join('') +
      `\nServer memory per idle stream (${SUBSCRIBERS} streams, after a full GC): RSS ${kib(perStream.coldRss)} on a fresh server, ${kib(perStream.warmRss)} reopened; heap+external ${kib(perStream.heap)}.\n`,
  );
}

// `node --expose-gc --import tsx bench/streams.ts` runs this part alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await runStreamBench();
