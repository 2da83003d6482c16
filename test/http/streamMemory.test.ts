/**
 * What never-reading stream clients cost the server: `folio serve` runs in a process of its own,
 * with a probe (test/support/memoryProbe.ts) that collects its garbage and reports what it
 * holds. Ten streams whose sockets never read while 250 documents of 1 MB are written leave the
 * server holding less than ten times (`streams.bufferBytes` + one event) more than the same
 * writes without them, since each stream's unsent bytes are bounded; a client over its bound is
 * closed with a reason, resumes from its Last-Event-ID, and a reading client meanwhile gets
 * everything.
 *
 * Why not the peak resident size: the writes alone leave 250-300 MiB of garbage whose collection
 * V8 times as it likes, so what the slow streams seemed to add swung from -23 to +65 MiB between
 * identical runs here and reached 206 MiB in CI, while streams that kept every event (no bound at
 * all) added only 169 MiB to it, under that test's 200 MiB limit. After
 * a full collection, and without what is in flight at one moment, the unbounded streams hold
 * 207 MiB more, and bounded ones nothing once they are closed (0 MiB in every run so far).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { call, processTenant } from '../reliability/processTenant.js';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';
import { MEMORY_PROBE_NODE_ARGS, memoryProbeEnv, probeMemory } from '../support/memoryProbe.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const MIB = 1024 * 1024;
const SLOW_STREAMS = 10;
const WRITES = 250;
/** A document of about 1 MB (under documents.maxBytes, 1 MiB). */
const BIG = 'x'.repeat(1_000_000);
/** streams.bufferBytes, its default (4 MiB), set here so that the bound below follows it. */
const BUFFER_BYTES = 4 * MIB;
/** When the first slow client starts reading: well past streams.bufferBytes and the socket buffers. */
const RESUME_AT = 25;
/**
 * The most the slow streams may add to what the server holds: each, its unread bytes up to its
 * bound and the event that crossed it. (Streams share one copy of each event's frame, so they
 * hold less than this; streams without a bound would hold every event written, 250 MB.)
 */
const BOUND_MIB = Math.floor((SLOW_STREAMS * (BUFFER_BYTES + BIG.length)) / MIB);

/** What the server's JavaScript holds after a full collection: its heap and its buffers (sockets' unsent bytes among them). */
interface Held {
  heapUsed: number;
  external: number;
}

const heldMiB = (h: Held) => (h.heapUsed + h.external) / MIB;

/**
 * The least of three probes 200 ms apart: what stays held, without what was in flight at one
 * moment (the buffers of the last writes, 0-30 MiB when the reader has just stopped).
 */
async function keptHeld(server: FolioProcess, probeFile: string): Promise<Held> {
  let least: Held | undefined;
  for (let probe = 0; probe < 3; probe++) {
    await sleep(200);
    const now = await probeMemory(server.child, probeFile);
    if (!least || heldMiB(now) < heldMiB(least)) least = now;
  }
  return least!;
}

describe('change streams: memory under clients that never read [embedded, own process] @slow', function () {
  this.timeout(180_000);
  let dataDir: string;
  const servers: FolioProcess[] = [];
  const sockets: Socket[] = [];

  before(async function () {
    if (process.platform !== 'linux') this.skip();
    dataDir = await mkdtemp(join(tmpdir(), 'folio-stream-memory-'));
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    for (const server of servers) await stopFolio(server);
    await rm(dataDir, { recursive: true, force: true });
  });

  /**
   * One server process, `slowStreams` never-reading streams and a reading one, WRITES writes:
   * what the server holds once the reader has every event (the slow streams still open).
   */
  async function run(slowStreams: number) {
    const probeFile = join(dataDir, `held-${slowStreams}.json`);
    const server = await serveFolio(
      {
        FOLIO_DATA_DIR: join(dataDir, String(slowStreams)),
        FOLIO_BOOTSTRAP: 'false',
        FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: '1000000',
        FOLIO_STREAMS_MAX_PER_KEY: '20',
        FOLIO_STREAMS_BUFFER_BYTES: String(BUFFER_BYTES),
        ...memoryProbeEnv(probeFile),
      },
      { nodeArgs: MEMORY_PROBE_NODE_ARGS },
    );
    servers.push(server);
    const own: Socket[] = [];
    const { key, project } = await processTenant(server.url, 'memory@example.test', 'memory');
    const path = `/${project}/big/_stream`;
    const { port } = new URL(server.url);

    // Streams whose sockets never read: the request is sent, then nothing is read.
    const slowData: string[] = Array.from({ length: slowStreams }, () => '');
    for (let i = 0; i < slowStreams; i++) {
      const socket = connect(Number(port), '127.0.0.1');
      sockets.push(socket);
      own.push(socket);
      socket.on('error', () => {});
      socket.setEncoding('latin1');
      socket.on('data', (chunk: string) => {
        slowData[i] += chunk;
      });
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      );
      // Read the response head, then stop reading.
      await new Promise((resolve) => socket.once('data', resolve));
      socket.pause();
    }
    // A client that reads: every event must reach it while the others hold back.
    const reader = await fetch(`${server.url}${path}`, {
      headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}` },
    });
    expect(reader.status).to.equal(200);
    const decoder = new TextDecoder();
    let readerText = '';
    let readerEvents = 0;
    const reading = (async () => {
      for await (const chunk of reader.body!) {
        readerText += decoder.decode(chunk as Uint8Array, { stream: true });
        // Count events and keep only the tail (the documents are large).
        const frames = readerText.split('\n\n');
        readerText = frames.pop() ?? '';
        readerEvents += frames.filter((f) => f.includes('event: document.created')).length;
        if (readerEvents >= WRITES) return;
      }
    })();

    // Warm up: one write through every path.
    const ids: string[] = [];
    const write = async () => {
      const res = await call(server.url, 'POST', `/${project}/big`, key, { big: BIG, n: ids.length });
      expect(res.status).to.equal(201);
      ids.push(String(res.body._id));
    };
    await write();
    while (ids.length < WRITES) {
      await write();
      // The first slow client, far past its bound by now, starts reading: it must find what it
      // was sent, then why it was closed (a client that never reads is cut off after a grace).
      if (ids.length === RESUME_AT) own[0]?.resume();
    }
    await reading;
    const heldNow = await keptHeld(server, probeFile);
    console.log(
      `      with ${slowStreams} never-reading streams, after ${WRITES} MB written the server holds ${heldMiB(heldNow).toFixed(0)} MiB (heap ${(heldNow.heapUsed / MIB).toFixed(0)}, buffers ${(heldNow.external / MIB).toFixed(0)})`,
    );
    expect(readerEvents).to.equal(WRITES);
    // The first slow stream is read below; the rest can go.
    for (const socket of own.slice(1)) socket.destroy();
    return { heldMiB: heldMiB(heldNow), ids, path, key, slowData, url: server.url, slow: own[0] };
  }

  it(`${SLOW_STREAMS} never-reading streams under ${WRITES} writes of 1 MB leave the server holding < ${BOUND_MIB} MiB more; the slow are closed with a reason they resume from, the reader gets everything`, async () => {
    // The same writes and reader without the slow streams: what the writes leave by themselves.
    const alone = await run(0);
    const withSlow = await run(SLOW_STREAMS);
    console.log(
      `      the ${SLOW_STREAMS} never-reading streams add ${(withSlow.heldMiB - alone.heldMiB).toFixed(0)} MiB`,
    );
    expect(withSlow.heldMiB - alone.heldMiB).to.be.below(BOUND_MIB);
    const { ids, path, key, slowData } = withSlow;
    const server = { url: withSlow.url };
    const decoder = new TextDecoder();

    // A slow client that reads now finds what it was sent, then why it was closed.
    const slow = withSlow.slow!;
    if (!slow.destroyed) await new Promise((resolve) => slow.once('close', resolve));
    const text = slowData[0]!;
    console.log(`      the slow client got ${[...text.matchAll(/^id: /gm)].length} events`);
    expect(text).to.include('event: stream.closed');
    expect(text).to.include('"reason":"overflow"');
    const got = [...text.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]!);
    // Far fewer than were written (its bytes were bounded), and some.
    expect(got.length)
      .to.be.above(0)
      .and.below(WRITES / 2);
    expect(got.length * BIG.length).to.be.below(16 * MIB);
    // It resumes from its Last-Event-ID: the next event is the first one it missed.
    const controller = new AbortController();
    const resumed = await fetch(`${server.url}${path}`, {
      headers: { Accept: 'text/event-stream', Authorization: `Bearer ${key}`, 'Last-Event-ID': got.at(-1)! },
      signal: controller.signal,
    });
    expect(resumed.status).to.equal(200);
    let resumedText = '';
    for await (const chunk of resumed.body!) {
      resumedText += decoder.decode(chunk as Uint8Array, { stream: true });
      if (/"_id":"[^"]+"/.test(resumedText)) break;
    }
    controller.abort();
    expect(/"_id":"([^"]+)"/.exec(resumedText)![1]).to.equal(ids[got.length]);
  });
});
