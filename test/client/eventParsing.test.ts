/**
 * How `subscribe()` reads Server-Sent Events written in ways Folio's server does not write but
 * the format allows (CRLF and CR line ends, a stream split into one-byte chunks, comments,
 * multi-line data, a block without an id), which id it resumes from (a bare `id:` line, a
 * checkpoint, once the heartbeat after it came; never an id whose block was cut), and what a
 * `stream.reset` does, with fetch and with an EventSource. A plain node:http server plays the
 * streams, so each byte is the test's choice.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { EventSource } from 'eventsource';
import { type ChangeEvent, createClient } from '../../client/folio.js';
import { until } from '../support/timeout.js';

const event = (id: string, n: number) => ({
  event: 'document.created',
  timestamp: '2026-01-01T00:00:00.000Z',
  collection: 'c',
  project: 'p',
  document: { _id: id, n, $version: 1, $createdAt: '', $updatedAt: '' },
});

/**
 * Answers the i-th stream request with `scripts[i]`, written a byte at a time, then cuts it; a
 * ticket request with a ticket (for the EventSource path); anything after the scripts with 404.
 */
async function playStreams(scripts: string[]) {
  const lastEventIds: (string | undefined)[] = [];
  let tickets = 0;
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'POST' && req.url?.endsWith('/_stream/tickets')) {
      tickets++;
      res.writeHead(201, { 'Content-Type': 'application/json' });
      return void res.end(
        JSON.stringify({ ticket: 't', expiresAt: '', url: `/p/c/_stream?ticket=t${tickets}` }),
      );
    }
    const script = scripts[lastEventIds.length];
    lastEventIds.push(req.headers['last-event-id'] as string | undefined);
    if (script === undefined) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    for (const byte of Buffer.from(script)) {
      res.write(Buffer.of(byte));
      await new Promise((resolve) => setImmediate(resolve));
    }
    res.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, lastEventIds, tickets: () => tickets, close: () => server.close() };
}

const RESET = 'event: stream.reset\nid: evt_reset\ndata: {"reason":"expired","message":"lost"}\n\n';

/** A subscription to the played streams, recording what the application got. */
function subscribe(url: string) {
  const events: ChangeEvent<{ n: number }>[] = [];
  const resets: unknown[] = [];
  const errors: unknown[] = [];
  const stop = createClient({ baseUrl: url })
    .project('p')
    .collection<{ n: number }>('c')
    .subscribe({}, (e) => events.push(e), { onReset: (r) => resets.push(r), onError: (e) => errors.push(e) });
  return { events, resets, errors, stop };
}

describe('client library: reading the event stream', () => {
  it('parses any line end and chunking, resumes from a checkpoint, never from a cut block; a reset starts from now', async () => {
    const first = JSON.stringify(event('a', 1));
    const cut = first.indexOf(',"timestamp"') + 1;
    const [head, tail] = [first.slice(0, cut), first.slice(cut)];
    const streams = await playStreams([
      // CRLF; data over two lines; a comment; then a checkpoint adopted at the heartbeat.
      `retry: 50\r\n: hello\r\nevent: document.created\r\nid: evt_1\r\ndata: ${head}\r\ndata: ${tail}\r\n\r\n` +
        'id: evt_checkpoint\r\n: heartbeat\r\n',
      // CR alone; then a block cut before its blank line: its id must not be adopted.
      `event: document.created\rid: evt_2\rdata: ${JSON.stringify(event('b', 2))}\r\r` +
        `event: document.created\rid: evt_3\rdata: ${JSON.stringify(event('c', 3))}\r`,
      // LF; a block without an id keeps the one before (WHATWG).
      `event: document.created\nid: evt_3\ndata: ${JSON.stringify(event('c', 3))}\n\n` +
        `event: other\ndata: {}\n\nevent: document.created\ndata: ${JSON.stringify(event('d', 4))}\n\n${RESET}` +
        `event: document.created\nid: evt_4\ndata: ${JSON.stringify(event('never', 4))}\n\n`,
      `event: document.created\nid: evt_5\ndata: ${JSON.stringify(event('e', 5))}\n\n`,
    ]);
    const seen = subscribe(streams.url);
    try {
      await until(() => seen.errors.length === 1, 'the end of the scripts (a 404)');
      expect(seen.events.map((e) => [e.document._id, e.id])).to.deep.equal([
        ['a', 'evt_1'],
        ['b', 'evt_2'],
        ['c', 'evt_3'],
        ['d', 'evt_3'],
        ['e', 'evt_5'],
      ]);
      // After the reset, a new stream from now (no Last-Event-ID).
      expect(streams.lastEventIds).to.deep.equal([undefined, 'evt_checkpoint', 'evt_2', undefined, 'evt_5']);
      expect(seen.resets).to.deep.equal([{ reason: 'expired', message: 'lost' }]);
      expect(seen.errors[0]).to.include({ status: 404 });
    } finally {
      seen.stop();
      streams.close();
    }
  });

  it('with an EventSource: a reset mints a new ticket; once it gives up, fetch goes on from its last event', async () => {
    const global = globalThis as { EventSource?: unknown };
    global.EventSource = EventSource;
    const streams = await playStreams([
      `retry: 20\nid: evt_start\n\nevent: document.created\nid: evt_1\ndata: ${JSON.stringify(event('a', 1))}\n\n${RESET}`,
      `retry: 20\nid: evt_start2\n\nevent: document.created\nid: evt_2\ndata: ${JSON.stringify(event('b', 2))}\n\n`,
    ]);
    const seen = subscribe(streams.url);
    try {
      await until(() => seen.errors.length === 1, 'the end of the scripts (a 404)');
      expect(seen.events.map((e) => e.document._id)).to.deep.equal(['a', 'b']);
      expect(seen.resets).to.have.length(1);
      expect(streams.tickets()).to.equal(2);
      // The EventSource's reconnection (refused: it gives up), then fetch's, both after b.
      expect(streams.lastEventIds).to.deep.equal([undefined, undefined, 'evt_2', 'evt_2']);
    } finally {
      seen.stop();
      streams.close();
      delete global.EventSource;
    }
  });
});
