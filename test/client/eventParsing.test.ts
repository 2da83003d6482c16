/**
 * How `subscribe()` reads Server-Sent Events written in ways Folio's server does not write but
 * the format allows (CRLF and CR line ends, a stream split into one-byte chunks, comments,
 * multi-line data, a block without an id), and which id it resumes from: a bare `id:` line (a
 * checkpoint) once the heartbeat after it came, never an id whose block was cut. A plain
 * node:http server plays the stream, so each byte is the test's choice.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { type ChangeEvent, createClient } from '../../client/folio.js';
import { until } from '../support/timeout.js';

const event = (id: string, n: number) => ({
  event: 'document.created',
  timestamp: '2026-01-01T00:00:00.000Z',
  collection: 'c',
  project: 'p',
  document: { _id: id, n, $version: 1, $createdAt: '', $updatedAt: '' },
});

/** Answers the i-th stream request with `scripts[i]`, written a byte at a time, then cuts it. */
async function playStreams(scripts: string[]) {
  const lastEventIds: (string | undefined)[] = [];
  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
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
  return { url, lastEventIds, close: () => server.close() };
}

describe('client library: reading the event stream', () => {
  it('parses any line end and chunking, resumes from a checkpoint, never from a cut block', async () => {
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
        `event: other\ndata: {}\n\nevent: document.created\ndata: ${JSON.stringify(event('d', 4))}\n\n`,
    ]);
    const events: ChangeEvent<{ n: number }>[] = [];
    const errors: unknown[] = [];
    const stop = createClient({ baseUrl: streams.url })
      .project('p')
      .collection<{ n: number }>('c')
      .subscribe({}, (e) => events.push(e), { onError: (e) => errors.push(e) });
    try {
      await until(() => errors.length === 1, 'the end of the scripts (a 404)');
      expect(events.map((e) => [e.document._id, e.id])).to.deep.equal([
        ['a', 'evt_1'],
        ['b', 'evt_2'],
        ['c', 'evt_3'],
        ['d', 'evt_3'],
      ]);
      expect(streams.lastEventIds).to.deep.equal([undefined, 'evt_checkpoint', 'evt_2', 'evt_3']);
      expect(errors[0]).to.include({ status: 404 });
    } finally {
      stop();
      streams.close();
    }
  });
});
