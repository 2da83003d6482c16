/**
 * `collection.subscribe()` in Node (fetch reading the stream) against a real server: live events,
 * then every event exactly once and in order through a cutting TCP proxy, a server restart and
 * `stream.closed`; `onReset` when the resume point expired; `onError` when the key is revoked or
 * the plan has no streams. The same with a WHATWG EventSource (the `eventsource` package) in
 * place of a browser's, which takes the ticket path.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { EventSource } from 'eventsource';
import {
  type ChangeEvent,
  type Collection,
  createClient,
  FolioError,
  type ResetInfo,
} from '../../client/folio.js';
import type { ConfigOverrides } from '../../src/config/load.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { until } from '../support/timeout.js';

interface Note {
  n: number;
  kind?: string;
}

const STREAM_SETTINGS = { heartbeatMs: 300, retryMs: 100, keyCheckMs: 1000 };
const STREAMS: ConfigOverrides = { streams: STREAM_SETTINGS };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A subscription's record: events, resets and errors as the application got them. */
function recorder() {
  const events: ChangeEvent<Note>[] = [];
  const resets: ResetInfo[] = [];
  const errors: FolioError[] = [];
  return {
    events,
    resets,
    errors,
    onEvent: (event: ChangeEvent<Note>) => events.push(event),
    handlers: { onReset: (info: ResetInfo) => resets.push(info), onError: (e: FolioError) => errors.push(e) },
    ids: () => events.map((e) => e.document._id),
  };
}

describe('client library: subscribe (Node, fetch)', function () {
  this.timeout(30_000);
  let server: TestServer;
  let tenant: Tenant;
  let proxy: TcpProxy;
  let dataDir: string;
  const stops: (() => void)[] = [];
  const openStreams = () => server.running.services.streams.openCount;

  const post = async (collection: string, body: Note): Promise<string> => {
    const res = await server.request('POST', `/${tenant.project}/${collection}`, { key: tenant.key, body });
    expect(res.status, res.text).to.equal(201);
    return res.body._id;
  };
  const collection = (name: string, key = tenant.key): Collection<Note> =>
    createClient({ baseUrl: proxy.url, key }).project(tenant.project).collection<Note>(name);

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-client-'));
    server = await startTestServer({ dataDir, config: STREAMS });
    tenant = await server.tenant({ plan: 'pro' });
    proxy = await startTcpProxy(server.url);
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) stop();
    await proxy.close();
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('delivers live events of the types and filter asked for, and none after unsubscribing', async () => {
    const seen = recorder();
    const notes = collection('live');
    const stop = notes.subscribe({ events: ['created', 'updated'], filter: { kind: 'a' } }, seen.onEvent);
    await until(() => openStreams() === 1, 'the stream to open');
    const a = await notes.create({ n: 1, kind: 'a' });
    await notes.create({ n: 2, kind: 'b' });
    await notes.patch(a._id, { n: 3 });
    await notes.delete(a._id);
    await notes.create({ n: 4, kind: 'a' });
    await until(() => seen.events.length === 3, 'three events');
    expect(seen.events.map((e) => [e.event, 'n' in e.document ? e.document.n : null])).to.deep.equal([
      ['document.created', 1],
      ['document.updated', 3],
      ['document.created', 4],
    ]);
    const [first] = seen.events;
    expect(first).to.include({ collection: 'live', project: tenant.project });
    expect(first?.id).to.match(/^evt_/);
    expect(first?.timestamp).to.be.a('string');
    stop();
    await until(() => openStreams() === 0, 'the stream to close');
    await notes.create({ n: 5, kind: 'a' });
    await sleep(200);
    expect(seen.events).to.have.length(3);
  });

  it('with a restricted key: only documents in its view, and `document.removed` (the id alone) when one leaves it', async () => {
    const rules = [{ collections: ['posts'], access: 'read' as const, filter: { kind: 'a' } }];
    const restricted = await tenant.newKey({ scope: 'read-only', rules });
    const seen = recorder();
    stops.push(collection('posts', restricted.rawKey).subscribe({}, seen.onEvent, seen.handlers));
    await until(() => openStreams() === 1, 'the stream to open');
    const shown = await post('posts', { n: 1, kind: 'a' });
    await post('posts', { n: 2, kind: 'b' });
    const writer = collection('posts');
    await writer.patch(shown, { kind: 'b', n: 3 });
    await post('posts', { n: 4, kind: 'a' });
    await until(() => seen.events.length === 3, 'three events');
    expect(seen.events.map((e) => [e.event, e.document])).to.deep.equal([
      ['document.created', seen.events[0]?.document],
      ['document.removed', { _id: shown }],
      ['document.created', seen.events[2]?.document],
    ]);
    expect(seen.events.map((e) => ('n' in e.document ? e.document.n : null))).to.deep.equal([1, null, 4]);
    expect(seen.errors).to.deep.equal([]);
  });

  it('resumes after cuts with every event exactly once, in order', async () => {
    const seen = recorder();
    stops.push(collection('cut').subscribe({}, seen.onEvent, seen.handlers));
    await until(() => openStreams() === 1, 'the stream to open');
    const written: string[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 3; i++) written.push(await post('cut', { n: written.length }));
      const before = proxy.connections;
      proxy.cut();
      written.push(await post('cut', { n: written.length })); // while it is away
      await until(() => proxy.connections > before, 'the reconnection');
    }
    for (let i = 0; i < 3; i++) written.push(await post('cut', { n: written.length }));
    await until(
      () => seen.events.length >= written.length,
      () => `${written.length} events, got ${seen.events.length}`,
    );
    await sleep(300);
    expect(seen.ids()).to.deep.equal(written);
    expect(proxy.connections).to.be.at.least(4);
    expect(seen.resets).to.deep.equal([]);
    expect(seen.errors).to.deep.equal([]);
  });

  it('resumes across a server restart (stream.closed, then refused connections) exactly once, in order', async () => {
    const seen = recorder();
    stops.push(collection('restart').subscribe({}, seen.onEvent, seen.handlers));
    await until(() => openStreams() === 1, 'the stream to open');
    const written = [await post('restart', { n: 0 }), await post('restart', { n: 1 })];
    await until(() => seen.events.length === 2, 'the first events');
    const { port } = new URL(server.url);
    await server.close();
    await sleep(300); // refused meanwhile: the client keeps trying
    server = await startTestServer({ dataDir, config: { ...STREAMS, port: Number(port) } });
    // Written before or after it is back: replayed from its Last-Event-ID, or live.
    for (let n = 2; n < 6; n++) written.push(await post('restart', { n }));
    await until(
      () => seen.events.length >= 6,
      () => `six events, got ${seen.events.length}`,
    );
    await sleep(300);
    expect(seen.ids()).to.deep.equal(written);
    expect(seen.resets).to.deep.equal([]);
    expect(seen.errors).to.deep.equal([]);
  });

  it('stops with onError on a revoked key (401) and on a plan without streams (403)', async () => {
    const { rawKey, id } = await tenant.newKey({ scope: 'read-only' });
    const revoked = recorder();
    stops.push(collection('stop', rawKey).subscribe({}, revoked.onEvent, revoked.handlers));
    await until(() => openStreams() === 1, 'the stream to open');
    const res = await server.request('DELETE', `/api/keys/${id}`, { session: tenant.session });
    expect(res.status).to.be.oneOf([200, 204]);
    await until(() => revoked.errors.length === 1, 'the error');
    expect(revoked.errors[0]).to.be.instanceOf(FolioError).and.include({ status: 401 });

    const free = await server.tenant({ plan: 'free' });
    const refused = recorder();
    createClient({ baseUrl: server.url, key: free.key })
      .project(free.project)
      .collection<Note>('stop')
      .subscribe({}, refused.onEvent, refused.handlers);
    await until(() => refused.errors.length === 1, 'the error');
    expect(refused.errors[0]).to.include({ status: 403, code: 'plan_feature_unavailable' });
  });

  it('with a WHATWG EventSource (the browser path: a stream ticket), resumes after cuts exactly once', async () => {
    const global = globalThis as { EventSource?: unknown };
    global.EventSource = EventSource;
    try {
      const seen = recorder();
      stops.push(collection('ticket').subscribe({ events: ['created'] }, seen.onEvent, seen.handlers));
      await until(() => openStreams() === 1, 'the stream to open');
      const written: string[] = [];
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 3; i++) written.push(await post('ticket', { n: written.length }));
        const before = proxy.connections;
        proxy.cut();
        written.push(await post('ticket', { n: written.length })); // while it is away
        await until(() => proxy.connections > before, 'the reconnection');
      }
      written.push(await post('ticket', { n: written.length }));
      await until(
        () => seen.events.length >= written.length,
        () => `${written.length} events`,
      );
      await sleep(300);
      expect(seen.ids()).to.deep.equal(written);
      expect(seen.errors).to.deep.equal([]);
    } finally {
      delete global.EventSource;
    }
  });
});

describe('client library: subscribe, events lost', function () {
  this.timeout(30_000);

  it('calls onReset when its resume point expired (410), then goes on from now', async () => {
    // Short enough to wait out (pruning runs every retentionMs / 2).
    const retentionMs = 1500;
    const server = await startTestServer({ config: { ...STREAMS, events: { retentionMs } } });
    const proxy = await startTcpProxy(server.url);
    try {
      const tenant = await server.tenant({ plan: 'pro' });
      const client = (baseUrl: string) =>
        createClient({ baseUrl, key: tenant.key }).project(tenant.project).collection<Note>('old');
      const notes = client(server.url);
      const seen = recorder();
      const stop = client(proxy.url).subscribe({}, seen.onEvent, seen.handlers);
      await until(() => server.running.services.streams.openCount === 1, 'the stream to open');
      await notes.create({ n: 1 });
      await until(() => seen.events.length === 1, 'the first event');
      proxy.down = true;
      await notes.create({ n: 2 }); // lost to this client: its id expires first
      await sleep(2.5 * retentionMs);
      proxy.down = false;
      await until(() => seen.resets.length === 1, 'the reset');
      expect(seen.resets[0]).to.include({ reason: 'expired' });
      await until(() => server.running.services.streams.openCount === 1, 'the new stream');
      await notes.create({ n: 3 });
      await until(() => seen.events.length === 2, 'the event after the reset');
      expect(seen.events.map((e) => ('n' in e.document ? e.document.n : null))).to.deep.equal([1, 3]);
      expect(seen.errors).to.deep.equal([]);
      stop();
    } finally {
      await proxy.close();
      await server.close();
    }
  });
});

describe('client library: subscribe, when its EventSource gives up', function () {
  this.timeout(30_000);

  it('goes on with fetch from the last event it delivered: exactly once, in order', async () => {
    // One stream per key: a second stream of the key makes the EventSource's reconnection a 429.
    const server = await startTestServer({ config: { streams: { ...STREAM_SETTINGS, maxPerKey: 1 } } });
    const proxy = await startTcpProxy(server.url);
    const global = globalThis as { EventSource?: unknown };
    global.EventSource = EventSource;
    const other = new AbortController();
    try {
      const tenant = await server.tenant({ plan: 'pro' });
      const notes = createClient({ baseUrl: server.url, key: tenant.key })
        .project(tenant.project)
        .collection<Note>('es');
      const seen = recorder();
      const stop = createClient({ baseUrl: proxy.url, key: tenant.key })
        .project(tenant.project)
        .collection<Note>('es')
        .subscribe({}, seen.onEvent, seen.handlers);
      const openStreams = () => server.running.services.streams.openCount;
      await until(() => openStreams() === 1, 'the stream to open');
      const written = [(await notes.create({ n: 0 }))._id];
      await until(() => seen.events.length === 1, 'the first event');
      proxy.down = true;
      await until(() => openStreams() === 0, 'the cut stream to close');
      const taken = await fetch(`${server.url}/${tenant.project}/es/_stream`, {
        headers: { Accept: 'text/event-stream', Authorization: `Bearer ${tenant.key}` },
        signal: other.signal,
      });
      expect(taken.status).to.equal(200);
      const before = proxy.connections;
      proxy.down = false;
      written.push((await notes.create({ n: 1 }))._id);
      await until(() => proxy.connections >= before + 2, 'the EventSource refused, then fetch trying');
      other.abort();
      written.push((await notes.create({ n: 2 }))._id);
      await until(
        () => seen.events.length >= 3,
        () => `three events, got ${seen.events.length}`,
      );
      await sleep(300);
      expect(seen.ids()).to.deep.equal(written);
      expect(seen.resets).to.deep.equal([]);
      expect(seen.errors).to.deep.equal([]);
      stop();
    } finally {
      other.abort();
      delete global.EventSource;
      await proxy.close();
      await server.close();
    }
  });
});
