/**
 * What never-reading stream clients cost the server: `folio serve` runs in a process of its own
 * so its resident memory is its alone (read from /proc). Ten streams whose sockets never read
 * while 1 MB documents are written add less than 200 MiB to the server's peak RSS, since each
 * stream's unsent bytes are bounded (`streams.bufferBytes`); a client over its bound is closed
 * with a reason, resumes from its Last-Event-ID, and a reading client meanwhile gets everything.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { call, processTenant } from '../reliability/processTenant.js';
import { type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A field of /proc/<pid>/status in KiB (VmRSS: now; VmHWM: the peak since the last reset). */
function procKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
}

const MIB = 1024 * 1024;
const SLOW_STREAMS = 10;
const WRITES = 250;
/** A document of about 1 MB (under documents.maxBytes, 1 MiB). */
const BIG = 'x'.repeat(1_000_000);
/** When the first slow client starts reading: well past streams.bufferBytes (4 MiB) and the socket buffers. */
const RESUME_AT = 25;

describe('change streams: memory under clients that never read [embedded, own process]', function () {
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
   * the server's peak RSS over the writes minus its RSS before them.
   */
  async function run(slowStreams: number) {
    const server = await serveFolio({
      FOLIO_DATA_DIR: join(dataDir, String(slowStreams)),
      FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: '1000000',
      FOLIO_STREAMS_MAX_PER_KEY: '20',
    });
    servers.push(server);
    const pid = server.child.pid!;
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

    // Warm up (one write through every path), then measure from here.
    const ids: string[] = [];
    const write = async () => {
      const res = await call(server.url, 'POST', `/${project}/big`, key, { big: BIG, n: ids.length });
      expect(res.status).to.equal(201);
      ids.push(String(res.body._id));
    };
    await write();
    await sleep(500);
    const baseKiB = procKiB(pid, 'VmRSS');
    // Reset the peak (VmHWM) to the current RSS.
    await writeFile(`/proc/${pid}/clear_refs`, '5');
    while (ids.length < WRITES) {
      await write();
      // The first slow client, far past its bound by now, starts reading: it must find what it
      // was sent, then why it was closed (a client that never reads is cut off after a grace).
      if (ids.length === RESUME_AT) own[0]?.resume();
    }
    await reading;
    const peakKiB = Math.max(procKiB(pid, 'VmHWM'), procKiB(pid, 'VmRSS'));
    const addedMiB = (peakKiB - baseKiB) / 1024;
    console.log(
      `      server RSS ${(baseKiB / 1024).toFixed(0)} MiB before, peak ${(peakKiB / 1024).toFixed(0)} MiB: +${addedMiB.toFixed(0)} MiB for ${slowStreams} never-reading streams and ${WRITES} MB written`,
    );
    expect(readerEvents).to.equal(WRITES);
    // The first slow stream is read below; the rest can go.
    for (const socket of own.slice(1)) socket.destroy();
    return { addedMiB, ids, path, key, slowData, url: server.url, slow: own[0] };
  }

  it(`${SLOW_STREAMS} never-reading streams under ${WRITES} writes of 1 MB add < 200 MiB RSS; the slow are closed with a reason they resume from, the reader gets everything`, async () => {
    // The same writes and reader without the slow streams: what the writes cost by themselves.
    const alone = await run(0);
    const withSlow = await run(SLOW_STREAMS);
    console.log(
      `      the ${SLOW_STREAMS} never-reading streams add ${(withSlow.addedMiB - alone.addedMiB).toFixed(0)} MiB`,
    );
    expect(withSlow.addedMiB - alone.addedMiB).to.be.below(200);
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
