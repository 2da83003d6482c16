/**
 * The change stream as three SSE client libraries no one here wrote see it, through a TCP proxy
 * that cuts connections like a network would: `eventsource` (a WHATWG EventSource for Node),
 * `eventsource-client` and `@microsoft/fetch-event-source`. Each must resume after a cut with
 * every event exactly once and in order, hand its application nothing but document events (no
 * heartbeat, retry hint or checkpoint), and resume from a checkpoint. fetch-event-source also
 * runs on its defaults in a plain `node` process of its own (test/support/fetchEventSourceChild.mjs),
 * where fetch is the runtime's (Node 20: undici 6), not the undici package this process loads.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { fetchEventSource } from '@microsoft/fetch-event-source';
import { expect } from 'chai';
import { EventSource } from 'eventsource';
import { createEventSource } from 'eventsource-client';
import type { ConfigOverrides } from '../../src/config/load.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { until } from '../support/timeout.js';

// fetch-event-source is written for browsers: it reads `window` and `document` (we pass
// `openWhenHidden`, so only for their timers and a no-op listener).
const browserGlobals = globalThis as { window?: unknown; document?: unknown };
browserGlobals.window ??= globalThis;
browserGlobals.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a library handed to the application's message handler(s). */
interface Message {
  event: string;
  id: string | undefined;
  data: string;
}

interface LibraryClient {
  readonly messages: Message[];
  /** The Last-Event-ID header of every request the library made (null: none). */
  readonly lastEventIds: (string | null)[];
  /** Answers other than 200 the library got. */
  readonly refusals: number[];
  close(): void;
}

/** A fetch that adds the key and records what the library asked and was answered. */
function recordingFetch(key: string, lastEventIds: (string | null)[], refusals: number[]) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${key}`);
    lastEventIds.push(headers.get('Last-Event-ID'));
    const response = await fetch(input, { ...init, headers });
    if (response.status !== 200) refusals.push(response.status);
    return response;
  };
}

const DOCUMENT_EVENTS = ['document.created', 'document.updated', 'document.deleted'];

const LIBRARIES: Record<string, (url: string, key: string) => LibraryClient> = {
  eventsource(url, key) {
    const messages: Message[] = [];
    const lastEventIds: (string | null)[] = [];
    const refusals: number[] = [];
    const source = new EventSource(url, { fetch: recordingFetch(key, lastEventIds, refusals) });
    const record = (e: MessageEvent) =>
      messages.push({ event: e.type, id: e.lastEventId, data: String(e.data) });
    // Its application listens for the named document events, and `message` in case.
    for (const type of [...DOCUMENT_EVENTS, 'message']) source.addEventListener(type, record);
    return { messages, lastEventIds, refusals, close: () => source.close() };
  },
  'eventsource-client'(url, key) {
    const messages: Message[] = [];
    const lastEventIds: (string | null)[] = [];
    const refusals: number[] = [];
    const source = createEventSource({
      url,
      fetch: recordingFetch(key, lastEventIds, refusals),
      onMessage: (m) => messages.push({ event: m.event ?? 'message', id: m.id, data: m.data }),
    });
    return { messages, lastEventIds, refusals, close: () => source.close() };
  },
  'fetch-event-source'(url, key) {
    const messages: Message[] = [];
    const lastEventIds: (string | null)[] = [];
    const refusals: number[] = [];
    const controller = new AbortController();
    void fetchEventSource(url, {
      signal: controller.signal,
      openWhenHidden: true,
      fetch: recordingFetch(key, lastEventIds, refusals),
      onmessage: (m) => messages.push({ event: m.event || 'message', id: m.id, data: m.data }),
      // Retry after every error, at the server's retry hint (the library's default policy).
      onerror: () => undefined,
    }).catch(() => {});
    return { messages, lastEventIds, refusals, close: () => controller.abort() };
  },
};

/** Every message must be a document event an application can use as is. */
function documentIds(client: LibraryClient): string[] {
  return client.messages.map((m) => {
    expect(DOCUMENT_EVENTS, JSON.stringify(m)).to.include(m.event);
    const data = JSON.parse(m.data) as { document: { _id: string } };
    expect(data.document._id).to.be.a('string');
    return data.document._id;
  });
}

/** The checkpoint test's retention: events are pruned every half of it. */
const RETENTION_MS = 8000;

const STREAM_CONFIG: ConfigOverrides = {
  streams: { heartbeatMs: 200, retryMs: 100, keyCheckMs: 1000, bufferLimit: 50, maxPerKey: 20 },
};

describe('change stream through three SSE client libraries and a cutting TCP proxy [embedded]', function () {
  this.timeout(60_000);
  let server: TestServer;
  let tenant: Tenant;
  let proxy: TcpProxy;
  const clients: LibraryClient[] = [];
  const children: ChildProcess[] = [];

  const post = async (collection: string, body: object): Promise<string> => {
    const res = await server.request('POST', `/${tenant.project}/${collection}`, { key: tenant.key, body });
    expect(res.status, res.text).to.equal(201);
    return res.body._id as string;
  };
  const openStreams = () => server.running.services.streams.openCount;

  beforeEach(async function () {
    // The checkpoint test needs events that expire while the test runs; the others keep the
    // default retention (a loaded machine must not expire what a reconnection resumes from).
    const retention = this.currentTest?.title.includes('checkpoint')
      ? { events: { retentionMs: RETENTION_MS } }
      : {};
    server = await startTestServer({ config: { ...STREAM_CONFIG, ...retention } });
    tenant = await server.tenant({ plan: 'pro' });
    proxy = await startTcpProxy(server.url);
  });

  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    for (const child of children.splice(0)) child.kill();
    await proxy.close();
    await server.close();
  });

  for (const [name, open] of Object.entries(LIBRARIES)) {
    it(`${name}: a cut is an error, and it resumes with every event exactly once, in order`, async () => {
      const collection = 'cut';
      const client = open(`${proxy.url}/${tenant.project}/${collection}/_stream`, tenant.key);
      clients.push(client);
      await until(() => openStreams() === 1, 'the stream to open');
      const written: string[] = [];
      for (let i = 0; i < 3; i++) written.push(await post(collection, { i }));
      await until(() => client.messages.length === 3, 'the first three events');
      const lastBeforeCut = client.messages[2]!.id;
      proxy.cut();
      // Written while the client is cut off (or reconnecting): replayed from its Last-Event-ID.
      for (let i = 3; i < 7; i++) written.push(await post(collection, { i }));
      await until(
        () => proxy.connections >= 2 && openStreams() === 1,
        () => `the reconnection (answers other than 200: ${client.refusals.join(', ') || 'none'})`,
      );
      for (let i = 7; i < 10; i++) written.push(await post(collection, { i }));
      await until(() => client.messages.length >= 10, 'all ten events');
      await sleep(300);
      expect(documentIds(client)).to.deep.equal(written);
      expect(client.refusals).to.deep.equal([]);
      // It reconnected (a cut is not a clean end), with the id of the last event it got.
      expect(client.lastEventIds.length).to.be.at.least(2);
      expect(client.lastEventIds[0]).to.equal(null);
      expect(client.lastEventIds[1]).to.equal(lastBeforeCut);
    });
  }

  it('fetch-event-source on its defaults, in a process with only the runtime’s fetch: a cut is an error, and it resumes with every event exactly once', async () => {
    const collection = 'cut-runtime';
    const child = spawn(
      'node',
      [
        fileURLToPath(new URL('../support/fetchEventSourceChild.mjs', import.meta.url)),
        `${proxy.url}/${tenant.project}/${collection}/_stream`,
        tenant.key,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.push(child);
    const lines: { event?: string; id?: string; data?: string; ended?: string }[] = [];
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const complete = output.split('\n');
      output = complete.pop() ?? '';
      for (const line of complete) if (line) lines.push(JSON.parse(line));
    });
    const messages = () => lines.filter((line) => line.event !== undefined);
    const ended = () => lines.find((line) => line.ended !== undefined)?.ended ?? 'no';
    await until(() => openStreams() === 1, 'the stream to open');
    const written: string[] = [];
    for (let i = 0; i < 3; i++) written.push(await post(collection, { i }));
    await until(() => messages().length === 3, 'the first three events');
    proxy.cut();
    for (let i = 3; i < 7; i++) written.push(await post(collection, { i }));
    await until(
      () => proxy.connections >= 2 && openStreams() === 1,
      () => `the reconnection (${messages().length} events; the library ended: ${ended()})`,
    );
    for (let i = 7; i < 10; i++) written.push(await post(collection, { i }));
    await until(
      () => messages().length >= 10,
      () => `all ten events (got ${messages().length})`,
    );
    await sleep(300);
    const got = messages().map((m) => {
      expect(DOCUMENT_EVENTS).to.include(m.event);
      return (JSON.parse(m.data!) as { document: { _id: string } }).document._id;
    });
    expect(got).to.deep.equal(written);
    expect(ended()).to.equal('no');
  });

  // 12 s of waiting out the retention; the checkpoint itself is in npm test (streams.test.ts).
  it('all three resume from a checkpoint: none sees it, none replays what it skipped, and none is refused although their last event expired @slow', async () => {
    // Three filtered streams: one wanted event each, then only events their filter skips.
    const names = Object.keys(LIBRARIES);
    const opened = names.map((name) => ({
      name,
      collection: `cp-${name}`,
      client: LIBRARIES[name]!(
        `${proxy.url}/${tenant.project}/cp-${name}/_stream?filter[wanted]=true`,
        tenant.key,
      ),
    }));
    clients.push(...opened.map((o) => o.client));
    await until(() => openStreams() === names.length, 'the streams to open');
    const first = new Map<string, string>();
    for (const o of opened) first.set(o.name, await post(o.collection, { wanted: true }));
    await until(() => opened.every((o) => o.client.messages.length === 1), 'the wanted events');
    const wantedAt = Date.now();
    // Skipped events well after the wanted one, so they outlive it: the wanted one is gone by
    // 1.5 × the retention (pruned every half of it), the skipped ones stay until 1.7 ×.
    await sleep(0.7 * RETENTION_MS);
    for (const o of opened) for (let i = 0; i < 3; i++) await post(o.collection, { wanted: false, i });
    // A heartbeat (200 ms) carries each stream's checkpoint.
    await sleep(600);
    // Wait until the wanted events' ids are gone from the history: an unfiltered stream resuming
    // from one is refused (410) from then on.
    await until(
      async () => {
        const probe = await fetch(`${server.url}/${tenant.project}/${opened[0]!.collection}/_stream`, {
          headers: {
            Accept: 'text/event-stream',
            Authorization: `Bearer ${tenant.key}`,
            'Last-Event-ID': opened[0]!.client.messages[0]!.id!,
          },
        });
        await probe.body?.cancel();
        return probe.status === 410;
      },
      'the wanted events to expire',
      2 * RETENTION_MS,
    );
    expect(Date.now() - wantedAt).to.be.below(
      1.7 * RETENTION_MS,
      'the skipped events must still be retained',
    );
    proxy.cut();
    await until(
      () => proxy.connections >= 2 * names.length && openStreams() === names.length,
      () =>
        `the reconnections (answers other than 200: ${opened.map((o) => `${o.name} [${o.client.refusals.join(', ')}]`).join('; ')})`,
    );
    const second = new Map<string, string>();
    for (const o of opened) second.set(o.name, await post(o.collection, { wanted: true }));
    await until(() => opened.every((o) => o.client.messages.length >= 2), 'the next wanted events');
    await sleep(300);
    for (const o of opened) {
      expect(documentIds(o.client), o.name).to.deep.equal([first.get(o.name), second.get(o.name)]);
      expect(o.client.refusals, o.name).to.deep.equal([]);
    }
    // fetch-event-source adopts the checkpoint's id itself; the others resume from their last
    // event's id, which the server maps to the checkpoint.
    const fes = opened.find((o) => o.name === 'fetch-event-source')!.client;
    expect(fes.lastEventIds[1]).to.match(/^evt_/);
    expect(fes.lastEventIds[1]).not.to.equal(fes.messages[0]!.id);
  });
});
