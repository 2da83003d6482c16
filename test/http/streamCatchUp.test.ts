/**
 * A stream resumed over a large backlog (`Last-Event-ID`), against `folio serve` in a process of
 * its own: a client that reads as fast as the events come gets the whole backlog in one
 * connection, since a replay is written as the socket takes it rather than held against
 * `streams.bufferBytes`; a client that reads nothing is still closed (`overflow`) with a few
 * MiB sent, and the server holds no more for it than that bound.
 *
 * The default suite replays 40 documents of 900 KB (the case reported: 5 events, then
 * `stream.closed`); `RELIABILITY_LONG=1` replays 110 documents of 1 MB (≥ 100 MiB).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { call, processTenant } from '../reliability/processTenant.js';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';
import { MEMORY_PROBE_NODE_ARGS, memoryProbeEnv, probeMemory } from '../support/memoryProbe.js';

const MIB = 1024 * 1024;
const LONG = process.env.RELIABILITY_LONG === '1';
const DOCUMENTS = LONG ? 110 : 40;
/** Under documents.maxBytes (1 MiB, every plan). */
const BIG = 'x'.repeat(LONG ? 1_000_000 : 900_000);
/** streams.bufferBytes, its default. */
const BUFFER_BYTES = 4 * MIB;
/** Short, so that a client that stops reading is found out quickly. */
const HEARTBEAT_MS = 300;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Read {
  events: number;
  bytes: number;
  closed: string | null;
  lastId: string | null;
}

/** Count a stream's document events and bytes until `stop` says so or the response ends. */
async function readStream(res: Response, stop: (read: Read) => boolean): Promise<Read> {
  const read: Read = { events: 0, bytes: 0, closed: null, lastId: null };
  const decoder = new TextDecoder();
  let tail = '';
  for await (const chunk of res.body!) {
    read.bytes += (chunk as Uint8Array).length;
    tail += decoder.decode(chunk as Uint8Array, { stream: true });
    const frames = tail.split('\n\n');
    tail = frames.pop() ?? '';
    for (const frame of frames) {
      if (frame.includes('event: document.created')) {
        read.events += 1;
        read.lastId = /^id: (\S+)$/m.exec(frame)?.[1] ?? read.lastId;
      }
      if (frame.includes('event: stream.closed')) read.closed = /"reason":"([^"]+)"/.exec(frame)?.[1] ?? '?';
    }
    if (stop(read)) break;
  }
  return read;
}

describe('change streams: catching up over a large backlog [embedded, own process]', function () {
  this.timeout(LONG ? 300_000 : 120_000);
  let dataDir: string;
  let server: FolioProcess;
  let probeFile: string;
  let key: string;
  let path: string;
  /** The id of the event before the backlog. */
  let resumeFrom: string;
  const sockets: Socket[] = [];

  const headers = (lastEventId: string) => ({
    Accept: 'text/event-stream',
    Authorization: `Bearer ${key}`,
    'Last-Event-ID': lastEventId,
  });

  before(async function () {
    if (process.platform !== 'linux') this.skip();
    dataDir = await mkdtemp(join(tmpdir(), 'folio-stream-catch-up-'));
    probeFile = join(dataDir, 'held.json');
    server = await serveFolio(
      {
        FOLIO_DATA_DIR: join(dataDir, 'data'),
        FOLIO_BOOTSTRAP: 'false',
        FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: '1000000',
        FOLIO_STREAMS_BUFFER_BYTES: String(BUFFER_BYTES),
        FOLIO_STREAMS_HEARTBEAT_MS: String(HEARTBEAT_MS),
        ...memoryProbeEnv(probeFile),
      },
      { nodeArgs: MEMORY_PROBE_NODE_ARGS },
    );
    const tenant = await processTenant(server.url, 'catch-up@example.test', 'catchup');
    key = tenant.key;
    path = `/${tenant.project}/big/_stream`;
    // One event to resume after, then the backlog, written while no stream is open.
    const opened = new AbortController();
    const first = await fetch(`${server.url}${path}`, {
      headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}` },
      signal: opened.signal,
    });
    expect((await call(server.url, 'POST', `/${tenant.project}/big`, key, { n: -1 })).status).to.equal(201);
    resumeFrom = (await readStream(first, (read) => read.events === 1)).lastId!;
    opened.abort();
    for (let n = 0; n < DOCUMENTS; n++) {
      const res = await call(server.url, 'POST', `/${tenant.project}/big`, key, { n, big: BIG });
      expect(res.status).to.equal(201);
    }
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    if (server) await stopFolio(server);
    await rm(dataDir, { recursive: true, force: true });
  });

  it(`a client reading as fast as it can gets all ${DOCUMENTS} events of ${((DOCUMENTS * BIG.length) / MIB) | 0} MiB in one connection`, async () => {
    const controller = new AbortController();
    const res = await fetch(`${server.url}${path}`, {
      headers: headers(resumeFrom),
      signal: controller.signal,
    });
    expect(res.status).to.equal(200);
    const started = Date.now();
    const read = await readStream(res, (r) => r.events === DOCUMENTS || r.closed !== null);
    controller.abort();
    console.log(
      `      ${read.events} events, ${(read.bytes / MIB).toFixed(1)} MiB in ${Date.now() - started} ms, closed: ${read.closed ?? 'no'}`,
    );
    expect(read.closed).to.equal(null);
    expect(read.events).to.equal(DOCUMENTS);
    expect(read.bytes).to.be.above(DOCUMENTS * BIG.length);
  });

  it('a client that reads nothing is closed (overflow) with a few MiB sent, the server holding no more for it', async () => {
    const before = await probeMemory(server.child, probeFile);
    const { port } = new URL(server.url);
    const socket = connect(Number(port), '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => {});
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    const lines = Object.entries(headers(resumeFrom)).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n${lines.join('')}\r\n`);
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    // Several heartbeats of not reading, then what the server holds with the stream open or just closed.
    await sleep(10 * HEARTBEAT_MS);
    const during = await probeMemory(server.child, probeFile);
    const heldMiB = (during.heapUsed + during.external - before.heapUsed - before.external) / MIB;
    socket.resume();
    await closed;
    const text = Buffer.concat(chunks).toString('latin1');
    const events = text.match(/^event: document\.created$/gm)?.length ?? 0;
    console.log(
      `      the never-reading client: ${events} events, ${(text.length / MIB).toFixed(1)} MiB, then ${/"reason":"(\w+)"/.exec(text)?.[1] ?? 'no close'}; the server held ${heldMiB.toFixed(1)} MiB more`,
    );
    expect(text).to.include('event: stream.closed');
    expect(text).to.include('"reason":"overflow"');
    expect(text).to.include('stopped reading while its missed events were replayed');
    expect(events).to.be.below(DOCUMENTS / 2);
    expect(heldMiB).to.be.below((BUFFER_BYTES + 2 * BIG.length) / MIB);
  });
});
