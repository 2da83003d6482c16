/**
 * `GET /{ns}/{collection}/_stream` over real HTTP, read with a real SSE client library
 * (`eventsource`), on every available store.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { expect } from 'chai';
import type { ConfigOverrides } from '../../src/config/load.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { forEachStore } from '../support/stores.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { until } from '../support/timeout.js';

/** Short timings so the suite stays fast; `retryMs` makes the client reconnect quickly. */
const STREAM_CONFIG: ConfigOverrides = {
  streams: {
    heartbeatMs: 300,
    retryMs: 100,
    keyCheckMs: 100,
    bufferLimit: 50,
    maxPerKey: 10,
    bufferBytes: 1024 * 1024,
  },
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

forEachStore(
  'change stream (SSE)',
  (ctx, target) => {
    const clients: StreamClient[] = [];
    const streamPath = (collection: string, query = '') =>
      `/${ctx.tenant.project}/${collection}/_stream${query}`;
    const open = (
      collection: string,
      options: { key?: string; query?: string; lastEventId?: string } = {},
    ) => {
      const client = new StreamClient(
        `${ctx.server.url}${streamPath(collection, options.query)}`,
        options.key ?? ctx.tenant.key,
        options.lastEventId ? { lastEventId: options.lastEventId } : {},
      );
      clients.push(client);
      return client;
    };
    const post = async (collection: string, body: object, key = ctx.tenant.key) => {
      const res = await ctx.server.request('POST', `/${ctx.tenant.project}/${collection}`, { key, body });
      expect(res.status, res.text).to.equal(201);
      return res.body;
    };
    /** The status and JSON error of a stream request that must be refused before it opens. */
    const refused = async (path: string, headers: Record<string, string>) => {
      const res = await fetch(`${ctx.server.url}${path}`, { headers });
      const text = await res.text();
      return {
        status: res.status,
        body: text ? JSON.parse(text) : null,
        type: res.headers.get('content-type'),
      };
    };
    /** Streams open in the server (the metrics' count; /healthz no longer shows it). */
    const openStreams = () => ctx.server.running.services.streams.openCount;
    const sse = (key = ctx.tenant.key) => ({ Accept: 'text/event-stream', Authorization: `Bearer ${key}` });

    afterEach(async () => {
      for (const client of clients.splice(0)) client.close();
      // Every stream is gone before the next test counts slots or sources.
      await until(() => openStreams() === 0, 'streams to close');
    });

    describe('before the stream opens', () => {
      it('answers 406 unless Accept names text/event-stream', async () => {
        for (const accept of [undefined, 'application/json', '*/*', 'text/*', 'text/event-stream;q=0']) {
          const headers: Record<string, string> = { Authorization: `Bearer ${ctx.tenant.key}` };
          if (accept) headers.Accept = accept;
          const res = await refused(streamPath('notes'), headers);
          expect(res.status, accept).to.equal(406);
          expect(res.body.error.code).to.equal('not_acceptable');
        }
        const ok = open('notes');
        await ok.opened;
      });

      it('answers 401 without a valid key', async () => {
        const res = await refused(streamPath('notes'), { Accept: 'text/event-stream' });
        expect(res.status).to.equal(401);
      });

      it('answers 403 plan_feature_unavailable on the Free plan', async () => {
        const free = await ctx.server.tenant({ plan: 'free' });
        const res = await refused(`/${free.project}/notes/_stream`, sse(free.key));
        expect(res.status).to.equal(403);
        expect(res.body.error.code).to.equal('plan_feature_unavailable');
      });

      it('answers 400 invalid_query for bad events or filters, and 403 past the plan’s filter count', async () => {
        for (const query of [
          '?events=created,bogus',
          '?events=',
          '?filter[n][zz]=1',
          '?filter[$where]=1',
          '?sort=n',
          '?events=created&events=updated',
        ]) {
          const res = await refused(streamPath('notes', query), sse());
          expect(res.status, query).to.equal(400);
          expect(res.body.error.code, query).to.equal('invalid_query');
        }
        const tooMany = Array.from({ length: 21 }, (_, i) => `filter[f${i}]=1`).join('&');
        const res = await refused(streamPath('notes', `?${tooMany}`), sse());
        expect(res.status).to.equal(403);
        expect(res.body.error.code).to.equal('plan_limit_exceeded');
        const atLimit = Array.from({ length: 20 }, (_, i) => `filter[f${i}]=1`).join('&');
        await open('notes', { query: `?${atLimit}` }).opened;
      });

      it('answers 410 resync_required (expired, as for an expired id) for a forged, altered or another tenant’s Last-Event-ID; the client library stops', async () => {
        // A real id of another tenant, and the same id altered by one character.
        const other = await ctx.server.tenant({ plan: 'pro' });
        const theirs = new StreamClient(`${ctx.server.url}/${other.project}/notes/_stream`, other.key);
        clients.push(theirs);
        await theirs.opened;
        await ctx.server.request('POST', `/${other.project}/notes`, { key: other.key, body: { i: 0 } });
        const [their] = await theirs.documents(1);
        expect(their!.id).to.match(/^evt_[A-Za-z0-9_-]+$/);
        const altered = `${their!.id.slice(0, -2)}${their!.id.endsWith('A') ? 'B' : 'A'}${their!.id.slice(-1)}`;
        const forged = [
          'evt_1',
          'nonsense',
          'evt_reset',
          'e1_reset',
          'evt_',
          'e1_',
          `evt_${'A'.repeat(86)}`,
          'evt_99999999999999',
          their!.id.replace(/^evt_/, 'e1_'),
        ];
        for (const id of [...forged, their!.id, altered]) {
          const res = await refused(streamPath('notes'), { ...sse(), 'Last-Event-ID': id });
          expect(res.status, id).to.equal(410);
          expect(res.body.error.code).to.equal('resync_required');
          expect(res.body.error.details.reason).to.equal('expired');
        }
        // The other tenant's own id still resumes for them.
        const controller = new AbortController();
        const own = await fetch(`${ctx.server.url}/${other.project}/notes/_stream`, {
          headers: {
            Accept: 'text/event-stream',
            Authorization: `Bearer ${other.key}`,
            'Last-Event-ID': their!.id,
          },
          signal: controller.signal,
        });
        expect(own.status).to.equal(200);
        controller.abort();
        let connects = 0;
        const client = new StreamClient(`${ctx.server.url}${streamPath('notes')}`, ctx.tenant.key, {
          lastEventId: their!.id,
          onConnect: () => connects++,
        });
        clients.push(client);
        const error = await client.nextError();
        expect(error.code).to.equal(410);
        await sleep(400);
        // No reconnection loop: one attempt, and the source is closed.
        expect(connects).to.equal(1);
        expect(client.source.readyState).to.equal(client.source.CLOSED);
      });
    });

    describe('events', () => {
      it('delivers every write in order, with event, id and the documented data', async () => {
        const client = open('events');
        await client.opened;
        const doc = await post('events', { name: 'Ada', tags: ['x'] });
        const base = `/${ctx.tenant.project}/events/${doc._id}`;
        const key = ctx.tenant.key;
        await ctx.server.request('PATCH', base, {
          key,
          rawBody: '{"name":"Ada L."}',
          contentType: 'application/merge-patch+json',
        });
        await ctx.server.request('PUT', base, { key, body: { name: 'Grace' } });
        const restored = await ctx.server.request('POST', `${base}/versions/1/restore`, { key });
        expect(restored.status).to.equal(200);
        expect((await ctx.server.request('DELETE', base, { key })).status).to.equal(204);
        const events = await client.documents(5);
        expect(events.map((e) => e.type)).to.deep.equal([
          'document.created',
          'document.updated',
          'document.updated',
          'document.updated',
          'document.deleted',
        ]);
        expect(events.map((e) => e.data.document.$version)).to.deep.equal([1, 2, 3, 4, 4]);
        const first = events[0]!;
        // Opaque ids of one length: nothing in them counts the store's (every tenant's) writes.
        expect(first.id).to.match(/^evt_[A-Za-z0-9_-]+$/);
        expect(new Set(events.map((e) => e.id)).size).to.equal(5);
        expect(new Set(events.map((e) => e.id.length)).size).to.equal(1);
        expect(first.data).to.deep.equal({
          event: 'document.created',
          timestamp: first.data.timestamp,
          collection: 'events',
          project: ctx.tenant.project,
          document: doc,
        });
        expect(new Date(first.data.timestamp).toISOString()).to.equal(first.data.timestamp);
        // A restore is an update; a delete carries the document as it was just before.
        expect(events[3]!.data.document).to.include({ name: 'Ada', $version: 4 });
        expect(events[4]!.data.document).to.include({ _id: doc._id, name: 'Ada', $version: 4 });
      });

      it('filters by event type and by the listing’s filter language, operators included', async () => {
        const created = open('filtered', { query: '?events=created' });
        const rich = open('filtered', { query: '?filter[n][gte]=5&filter[tag]=hot' });
        const deletes = open('filtered', { query: '?events=deleted,updated&filter[n][lt]=3' });
        await Promise.all([created.opened, rich.opened, deletes.opened]);
        const a = await post('filtered', { n: 1, tag: 'hot' });
        const b = await post('filtered', { n: 7, tag: 'hot' });
        await post('filtered', { n: 9, tag: 'cold' });
        expect(
          (
            await ctx.server.request('DELETE', `/${ctx.tenant.project}/filtered/${a._id}`, {
              key: ctx.tenant.key,
            })
          ).status,
        ).to.equal(204);
        const last = await post('filtered', { n: 5, tag: 'hot' });
        expect((await created.documents(4)).map((e) => e.data.document.n)).to.deep.equal([1, 7, 9, 5]);
        expect((await rich.documents(2)).map((e) => e.data.document._id)).to.deep.equal([b._id, last._id]);
        const deleted = await deletes.documents(1);
        expect(deleted.map((e) => [e.type, e.data.document._id])).to.deep.equal([
          ['document.deleted', a._id],
        ]);
      });

      it('lets a read-only key stream', async () => {
        const readOnly = await ctx.tenant.newKey({ scope: 'read-only' });
        const client = open('ro', { key: readOnly.rawKey });
        await client.opened;
        const doc = await post('ro', { x: 1 });
        expect((await client.documents(1))[0]!.data.document._id).to.equal(doc._id);
      });

      it('never shows a test key’s stream what live keys write, nor another collection', async () => {
        const live = await ctx.tenant.newKey({ env: 'live' });
        const testStream = open('envs');
        const liveStream = open('envs', { key: live.rawKey });
        await Promise.all([testStream.opened, liveStream.opened]);
        const fromLive = await post('envs', { env: 'live' }, live.rawKey);
        await post('other', { env: 'test' });
        const fromTest = await post('envs', { env: 'test' });
        expect((await testStream.documents(1))[0]!.data.document._id).to.equal(fromTest._id);
        expect((await liveStream.documents(1))[0]!.data.document._id).to.equal(fromLive._id);
        await sleep(200);
        expect(testStream.received.filter((e) => e.type.startsWith('document.'))).to.have.length(1);
      });

      it('sends the retry hint first and a heartbeat comment every streams.heartbeatMs', async () => {
        const controller = new AbortController();
        const res = await fetch(`${ctx.server.url}${streamPath('beats')}`, {
          headers: sse(),
          signal: controller.signal,
        });
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.equal('text/event-stream; charset=utf-8');
        // Chunked framing: a cut connection is an error to the client, never a normal end.
        expect(res.headers.get('transfer-encoding')).to.equal('chunked');
        // And no `Connection: close`, with which Node 20's fetch reads a cut as a normal end.
        expect(res.headers.get('connection')).to.equal('keep-alive');
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        const started = Date.now();
        while ((text.match(/: heartbeat\n/g) ?? []).length < 2) {
          const { value } = await reader.read();
          text += decoder.decode(value);
        }
        controller.abort();
        // Neither the hint nor a heartbeat ends a block (no blank line): no library dispatches them.
        expect(text).to.equal('retry: 100\n: heartbeat\n: heartbeat\n');
        // Two heartbeats at 300 ms take at least 600 ms, and far less than the default 30 s.
        expect(Date.now() - started).to.be.within(550, 5000);
      });
    });

    describe('resuming', () => {
      it('resumes after a dropped connection: every event written meanwhile, none twice', async function () {
        this.timeout(30_000);
        const relay = await startTcpProxy(ctx.server.url);
        try {
          let connects = 0;
          const client = new StreamClient(`${relay.url}${streamPath('resume')}`, ctx.tenant.key, {
            onConnect: () => connects++,
          });
          clients.push(client);
          await client.opened;
          const ids = [(await post('resume', { i: 0 }))._id, (await post('resume', { i: 1 }))._id];
          const before = await client.documents(2);
          relay.cut();
          await client.nextError();
          for (let i = 2; i < 6; i++) ids.push((await post('resume', { i }))._id);
          const after = await client.documents(4);
          ids.push((await post('resume', { i: 6 }))._id);
          const live = await client.documents(1);
          expect(connects).to.be.at.least(2);
          expect([...before, ...after, ...live].map((e) => e.data.document._id)).to.deep.equal(ids);
          await sleep(200);
          expect(client.received.filter((e) => e.type.startsWith('document.'))).to.have.length(7);
        } finally {
          await relay.close();
        }
      });

      it('replays after Last-Event-ID for a new client, then continues live', async () => {
        const first = open('replay');
        await first.opened;
        await post('replay', { i: 0 });
        const [seen] = await first.documents(1);
        first.close();
        const missed = [await post('replay', { i: 1 }), await post('replay', { i: 2 })];
        const resumed = open('replay', { lastEventId: seen!.id });
        expect((await resumed.documents(2)).map((e) => e.data.document._id)).to.deep.equal(
          missed.map((d) => d._id),
        );
        const live = await post('replay', { i: 3 });
        expect((await resumed.documents(1))[0]!.data.document._id).to.equal(live._id);
      });

      it('resumes from an id in the old e1_ spelling (kept by a client across the upgrade)', async () => {
        const first = open('legacy');
        await first.opened;
        await post('legacy', { i: 0 });
        const [seen] = await first.documents(1);
        first.close();
        const missed = await post('legacy', { i: 1 });
        const legacyId = seen!.id.replace(/^evt_/, 'e1_');
        expect(legacyId).to.match(/^e1_/);
        const resumed = open('legacy', { lastEventId: legacyId });
        expect((await resumed.documents(1))[0]!.data.document._id).to.equal(missed._id);
      });

      it('moves the resume point past events its filters skip (a checkpoint: an id line, no data, no blank line)', async () => {
        const controller = new AbortController();
        const res = await fetch(`${ctx.server.url}${streamPath('quiet', '?filter[wanted]=true')}`, {
          headers: sse(),
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        const decoder = new TextDecoder();
        let text = '';
        const skipped = await post('quiet', { wanted: false });
        while (!/\nid: \S+\n/.test(text)) text += decoder.decode((await reader.read()).value);
        controller.abort();
        const checkpoint = /\nid: (\S+)\n/.exec(text)![1]!;
        expect(checkpoint).to.match(/^evt_/);
        expect(text).not.to.include('data:');
        // No blank line ends it: no client library dispatches it.
        expect(text).not.to.match(/\nid: \S+\n\n/);
        // Resuming from it replays nothing already skipped.
        const resumed = open('quiet', { lastEventId: checkpoint });
        await resumed.opened;
        const wanted = await post('quiet', { wanted: true });
        expect((await resumed.documents(1))[0]!.data.document._id).to.equal(wanted._id);
        expect(skipped._id).not.to.equal(wanted._id);
      });
    });

    describe('limits and lifecycle', () => {
      it('allows streams.maxPerKey streams per key; the next gets 429, and a closed stream frees its slot at once', async () => {
        const streams = Array.from({ length: 10 }, () => open('capped'));
        await Promise.all(streams.map((s) => s.opened));
        const eleventh = await refused(streamPath('capped'), sse());
        expect(eleventh.status).to.equal(429);
        expect(eleventh.body.error).to.deep.include({ code: 'too_many_streams' });
        // Another key has its own slots.
        const other = await ctx.tenant.newKey();
        await open('capped', { key: other.rawKey }).opened;
        streams[0]!.close();
        await until(
          async () => {
            const res = await fetch(`${ctx.server.url}${streamPath('capped')}`, { headers: sse() });
            await res.body?.cancel();
            return res.status === 200;
          },
          'a freed slot',
          2000,
        );
      });

      it('closes a revoked or rotated-out key’s streams within seconds, and the client stops', async () => {
        const revoked = await ctx.tenant.newKey();
        const rotated = await ctx.tenant.newKey();
        const a = open('keys', { key: revoked.rawKey });
        const b = open('keys', { key: rotated.rawKey });
        await Promise.all([a.opened, b.opened]);
        const session = ctx.tenant.session;
        expect((await ctx.server.request('DELETE', `/api/keys/${revoked.id}`, { session })).status).to.equal(
          204,
        );
        expect(
          (await ctx.server.request('POST', `/api/keys/${rotated.id}/rotate`, { session })).status,
        ).to.equal(201);
        for (const client of [a, b]) {
          const closed = await client.next(['stream.closed'], 5000);
          expect(closed.data.reason).to.equal('key_revoked');
          // The library reconnects once, gets 401, and stops.
          await until(() => client.errors.some((e) => e.code === 401), 'the 401 on reconnection');
          expect(client.source.readyState).to.equal(client.source.CLOSED);
        }
      });

      it('closes the streams of an account moved to a plan without streams', async () => {
        const other = await ctx.server.tenant({ plan: 'pro' });
        const client = new StreamClient(`${ctx.server.url}/${other.project}/plans/_stream`, other.key);
        clients.push(client);
        await client.opened;
        const res = await ctx.server.request('PATCH', '/api/account', {
          session: other.session,
          body: { plan: 'free' },
        });
        expect(res.status).to.equal(200);
        const closed = await client.next(['stream.closed'], 5000);
        expect(closed.data.reason).to.equal('plan_changed');
        await until(() => client.errors.some((e) => e.code === 403), 'the 403 on reconnection');
      });

      it('never lets a client that stops reading delay the others; it is closed as too slow', async function () {
        this.timeout(60_000);
        const fast = open('slow');
        await fast.opened;
        // A raw HTTP client that reads the headers, then nothing.
        const slow = await new Promise<IncomingMessage>((resolve, reject) => {
          const req = httpRequest(`${ctx.server.url}${streamPath('slow')}`, { headers: sse() }, resolve);
          req.on('error', reject);
          req.end();
        });
        expect(slow.statusCode).to.equal(200);
        slow.pause();
        const over = new Promise((resolve) => slow.once('close', resolve));
        try {
          // More than the socket buffers hold (a few MB) plus the stream's streams.bufferBytes.
          const big = 'x'.repeat(200 * 1024);
          const written: string[] = [];
          for (let i = 0; i < 100 && openStreams() === 2; i++) {
            written.push((await post('slow', { i, big }))._id);
            // The fast client keeps up while the slow one's buffers fill.
            expect((await fast.documents(1))[0]!.data.document._id).to.equal(written[i]);
          }
          // The slow one was closed as too slow: once it reads (within the 5 s it is given), it
          // finds what it was sent, then the final event.
          expect(openStreams()).to.equal(1);
          let text = '';
          slow.setEncoding('utf8');
          slow.on('data', (chunk: string) => {
            text += chunk;
          });
          slow.resume();
          await over;
          expect(text).to.include('event: stream.closed');
          expect(text).to.include('"reason":"overflow"');
          // Everything written up to the event that took it over its bound, then the reason.
          const got = [...text.matchAll(/"document":\{"_id":"([^"]+)"/g)].map((m) => m[1]);
          expect(got).to.deep.equal(written);
          expect(text.lastIndexOf('event: stream.closed')).to.be.above(text.lastIndexOf('event: document.'));
        } finally {
          slow.destroy();
        }
      });

      it('watches 200 collections at once over one change source', async function () {
        this.timeout(60_000);
        const many = await startTestServer({
          config: {
            ...(await target.overrides()),
            streams: { heartbeatMs: 5000, retryMs: 100, keyCheckMs: 1000, bufferLimit: 50, maxPerKey: 200 },
          },
        });
        const local: StreamClient[] = [];
        try {
          const tenant: Tenant = await many.tenant({ plan: 'pro' });
          for (let i = 0; i < 200; i++) {
            local.push(new StreamClient(`${many.url}/${tenant.project}/c${i}/_stream`, tenant.key));
          }
          await Promise.all(local.map((c) => c.opened));
          expect(many.running.services.streams.openCount).to.equal(200);
          // /healthz answers without a key: it shows the one change source, not the streams.
          const health = await many.request('GET', '/healthz');
          expect(health.body.streams).to.deep.equal({ changeSources: 1 });
          for (const i of [0, 99, 199]) {
            const res = await many.request('POST', `/${tenant.project}/c${i}`, {
              key: tenant.key,
              body: { i },
            });
            const [event] = await local[i]!.documents(1);
            expect(event!.data).to.deep.include({ collection: `c${i}`, document: res.body });
          }
          expect(local[1]!.received).to.have.length(0);
        } finally {
          for (const c of local) c.close();
          await many.close();
        }
      });

      it('closes streams with a final event at shutdown, without waiting for a heartbeat', async function () {
        this.timeout(30_000);
        const own: TestServer = await startTestServer({
          config: { ...(await target.overrides()), streams: { heartbeatMs: 60_000, retryMs: 60_000 } },
        });
        const tenant = await own.tenant({ plan: 'pro' });
        const client = new StreamClient(`${own.url}/${tenant.project}/bye/_stream`, tenant.key);
        try {
          await client.opened;
          const started = Date.now();
          await own.close();
          // Not the keep-alive timeout (5 s) either: the stream's connection closes with it.
          expect(Date.now() - started).to.be.below(2000);
          const closed = await client.next(['stream.closed'], 1000);
          expect(closed.data.reason).to.equal('shutdown');
        } finally {
          client.close();
        }
      });
    });
  },
  { plan: 'pro', config: STREAM_CONFIG },
);

describe('change stream (SSE): expired Last-Event-ID [embedded]', () => {
  it('answers 410 resync_required (expired) once the id is older than events.retentionMs', async function () {
    this.timeout(20_000);
    // Long enough that the resume below still finds the event on a slow machine, short enough
    // to wait out.
    const retentionMs = 2000;
    const server = await startTestServer({ config: { events: { retentionMs }, ...STREAM_CONFIG } });
    try {
      const tenant = await server.tenant({ plan: 'pro' });
      const client = new StreamClient(`${server.url}/${tenant.project}/old/_stream`, tenant.key);
      await client.opened;
      await server.request('POST', `/${tenant.project}/old`, { key: tenant.key, body: { a: 1 } });
      const [event] = await client.documents(1);
      client.close();
      await server.request('POST', `/${tenant.project}/old`, { key: tenant.key, body: { a: 2 } });
      const resume = () =>
        fetch(`${server.url}/${tenant.project}/old/_stream`, {
          headers: {
            Accept: 'text/event-stream',
            Authorization: `Bearer ${tenant.key}`,
            'Last-Event-ID': event!.id,
          },
        });
      // Kept while young: resuming works.
      const young = await resume();
      expect(young.status).to.equal(200);
      await young.body?.cancel();
      // Pruning runs every retentionMs / 2: after twice the retention the event is surely gone.
      await sleep(2 * retentionMs);
      const res = await resume();
      expect(res.status).to.equal(410);
      const body = (await res.json()) as { error: { code: string; details: unknown } };
      expect(body.error).to.deep.include({ code: 'resync_required' });
      expect(body.error.details).to.deep.equal({ reason: 'expired' });
    } finally {
      await server.close();
    }
  });
});
