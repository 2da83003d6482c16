/**
 * The log's destination (src/logDestination.ts): lines wait for a batch of LOG_BATCH_BYTES, a
 * quiet line is written on the next LOG_FLUSH_MS tick, what would make more than
 * LOG_MAX_WAITING_BYTES wait is dropped and counted; and `folio serve` writes through it, its
 * drops on /metrics when nothing reads its output.
 */
import { once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { expect } from 'chai';
import type { SonicBoom } from 'sonic-boom';
import {
  LOG_BATCH_BYTES,
  LOG_FLUSH_MS,
  LOG_MAX_WAITING_BYTES,
  type LogBatching,
  logDestination,
} from '../src/logDestination.js';
import { type FolioProcess, serveFolio, stopFolio } from './support/folioProcess.js';

/** The defaults, with a flush too far off to happen during a test. */
const NO_TICK: LogBatching = {
  batchBytes: LOG_BATCH_BYTES,
  flushMs: 600_000,
  maxWaitingBytes: LOG_MAX_WAITING_BYTES,
};

/** pino's destination is a sonic-boom: its events say when a write to the file finished. */
async function opened(file: string, batching?: LogBatching) {
  const destination = logDestination(file, batching);
  const stream = destination.stream as SonicBoom;
  await once(stream, 'ready');
  return { ...destination, stream };
}

async function closed(stream: SonicBoom): Promise<void> {
  const done = once(stream, 'close');
  stream.end();
  await done;
}

describe('log destination: batched, bounded standard output', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-log-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts a write once LOG_BATCH_BYTES wait, and not a byte before', async () => {
    const file = join(dir, 'out.log');
    const { stream } = await opened(file, NO_TICK);
    const writes: number[] = [];
    stream.on('write', (n: number) => writes.push(n));
    stream.write(`${'a'.repeat(LOG_BATCH_BYTES - 2)}\n`);
    await delay(300);
    expect(writes, 'one byte short of a batch').to.deep.equal([]);
    expect(await readFile(file, 'utf8')).to.equal('');
    const written = once(stream, 'write');
    stream.write('b');
    await written;
    expect(writes).to.deep.equal([LOG_BATCH_BYTES]);
    expect((await stat(file)).size).to.equal(LOG_BATCH_BYTES);
    await closed(stream);
  });

  it('writes a quiet line on the next flush tick, within twice LOG_FLUSH_MS', async () => {
    const file = join(dir, 'out.log');
    const { stream } = await opened(file);
    const started = performance.now();
    stream.write('{"msg":"quiet"}\n');
    // A tick that met a write in flight (its own empty flush) leaves the line to the next one.
    while ((await readFile(file, 'utf8')) === '' && performance.now() - started < 5_000) await delay(5);
    const waited = performance.now() - started;
    expect(await readFile(file, 'utf8')).to.equal('{"msg":"quiet"}\n');
    expect(waited).to.be.below(2 * LOG_FLUSH_MS + 250);
    await closed(stream);
  });

  it('drops, and counts, a line that would make more than LOG_MAX_WAITING_BYTES wait', async () => {
    const file = join(dir, 'out.log');
    const { stream, droppedBytes } = await opened(file, NO_TICK);
    // Written in one turn of the event loop, nothing reaches the file meanwhile: all of it waits.
    const line = `${'c'.repeat(255)}\n`;
    for (let i = 0; i < LOG_MAX_WAITING_BYTES / line.length; i++) stream.write(line);
    expect(droppedBytes(), 'exactly the bound waiting').to.equal(0);
    stream.write('dropped\n');
    expect(droppedBytes()).to.equal('dropped\n'.length);
    await closed(stream);
    expect((await stat(file)).size).to.equal(LOG_MAX_WAITING_BYTES);
  });

  describe('folio serve', () => {
    const METRICS_TOKEN = 'log-destination-metrics-token';
    let server: FolioProcess | undefined;
    afterEach(async () => {
      if (server) await stopFolio(server);
      server = undefined;
    });

    async function start(): Promise<FolioProcess> {
      server = await serveFolio({
        FOLIO_DATA_DIR: join(dir, 'data'),
        FOLIO_LOG_LEVEL: 'info',
        FOLIO_METRICS_ENABLED: 'true',
        FOLIO_METRICS_TOKEN: METRICS_TOKEN,
      });
      return server;
    }

    async function droppedOnMetrics(url: string): Promise<number> {
      const res = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${METRICS_TOKEN}` } });
      const line = /^folio_log_dropped_bytes_total (\S+)$/m.exec(await res.text());
      if (!line) throw new Error('no folio_log_dropped_bytes_total on /metrics');
      return Number(line[1]);
    }

    it("writes a quiet request's access line to standard output within twice LOG_FLUSH_MS", async () => {
      const { child, url } = await start();
      let output = '';
      child.stdout!.on('data', (chunk) => {
        output += String(chunk);
      });
      const started = performance.now();
      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      while (!output.includes('"path":"/healthz"') && performance.now() - started < 5_000) await delay(5);
      expect(output).to.include('"path":"/healthz"');
      expect(performance.now() - started).to.be.below(2 * LOG_FLUSH_MS + 250);
      expect(await droppedOnMetrics(url)).to.equal(0);
    });

    it('drops and counts lines while nothing reads its output, and stays up', async function () {
      this.timeout(60_000);
      const { child, url } = await start();
      // Stop reading: the pipe fills, and the lines wait in Folio up to LOG_MAX_WAITING_BYTES.
      child.stdout!.pause();
      // Each 404 logs its 12 KB path: enough of them to fill the bound with room to spare.
      const path = `/nowhere/${'p'.repeat(12_000)}`;
      const requests = Math.ceil((LOG_MAX_WAITING_BYTES * 1.25) / path.length);
      for (let sent = 0; sent < requests; sent += 50) {
        await Promise.all(
          Array.from({ length: 50 }, () => fetch(`${url}${path}`).then((r) => r.arrayBuffer())),
        );
      }
      const dropped = await droppedOnMetrics(url);
      expect(dropped).to.be.above(0);
      // What was dropped is whole lines beyond the bound, never more than was sent.
      expect(dropped).to.be.below(requests * (path.length + 400));
      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      child.stdout!.resume();
    });
  });
});
