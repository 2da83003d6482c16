/**
 * The log's destination (src/logDestination.ts): lines wait for a batch of LOG_BATCH_BYTES, a
 * quiet line is written on the next LOG_FLUSH_MS tick, what would make more than
 * LOG_MAX_WAITING_BYTES wait is dropped and counted; and `folio serve` writes through it, its
 * drops on /metrics when nothing reads its output.
 */
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { expect } from 'chai';
import {
  LOG_BATCH_BYTES,
  LOG_FLUSH_MS,
  LOG_MAX_WAITING_BYTES,
  type LogBatching,
  logDestination,
} from '../src/logDestination.js';
import { type FolioProcess, serveFolio, stopFolio } from './support/folioProcess.js';
import { tempDir } from './support/tempDir.js';

/** The defaults, with a flush too far off to happen during a test. */
const NO_TICK: LogBatching = {
  batchBytes: LOG_BATCH_BYTES,
  flushMs: 600_000,
  maxWaitingBytes: LOG_MAX_WAITING_BYTES,
};

/** Waits until `check` holds, polling; false when it did not within `ms`. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (performance.now() > deadline) return false;
    await delay(5);
  }
}

const sizeOf = async (file: string) => (await stat(file).catch(() => null))?.size ?? 0;

describe('log destination: batched, bounded standard output', () => {
  const dir = tempDir('folio-log-');

  it('hands a batch to the file once LOG_BATCH_BYTES wait, and not a byte before', async () => {
    const file = join(dir(), 'out.log');
    const { stream } = logDestination(file, NO_TICK);
    stream.write(`${'a'.repeat(LOG_BATCH_BYTES - 2)}\n`);
    expect(await within(300, async () => (await sizeOf(file)) > 0), 'one byte short of a batch').to.equal(
      false,
    );
    stream.write('b');
    expect(await within(5_000, async () => (await sizeOf(file)) === LOG_BATCH_BYTES)).to.equal(true);
  });

  it('writes a quiet line on the next flush tick, within LOG_FLUSH_MS', async () => {
    const file = join(dir(), 'out.log');
    const { stream } = logDestination(file);
    // Once the file is open, so that opening it is not counted.
    await within(5_000, async () => (await stat(file).catch(() => null)) !== null);
    const started = performance.now();
    stream.write('{"msg":"quiet"}\n');
    expect(await within(5_000, async () => (await sizeOf(file)) > 0)).to.equal(true);
    const waited = performance.now() - started;
    expect(await readFile(file, 'utf8')).to.equal('{"msg":"quiet"}\n');
    expect(waited).to.be.below(LOG_FLUSH_MS + 250);
  });

  it('drops, and counts, a batch that would make more than LOG_MAX_WAITING_BYTES wait', async () => {
    const file = join(dir(), 'out.log');
    const { stream, droppedBytes } = logDestination(file, NO_TICK);
    // Written in one turn of the event loop, nothing reaches the file meanwhile: all of it waits.
    const line = `${'c'.repeat(255)}\n`;
    const batch = LOG_BATCH_BYTES / line.length;
    for (let i = 0; i < LOG_MAX_WAITING_BYTES / line.length; i++) stream.write(line);
    expect(droppedBytes(), 'exactly the bound waiting').to.equal(0);
    for (let i = 0; i < batch; i++) stream.write(line);
    expect(droppedBytes()).to.equal(LOG_BATCH_BYTES);
    expect(await within(10_000, async () => (await sizeOf(file)) === LOG_MAX_WAITING_BYTES)).to.equal(true);
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
        FOLIO_DATA_DIR: join(dir(), 'data'),
        FOLIO_BOOTSTRAP: 'false',
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

    it("writes a quiet request's access line to standard output within LOG_FLUSH_MS", async () => {
      const { child, url } = await start();
      let output = '';
      child.stdout!.on('data', (chunk) => {
        output += String(chunk);
      });
      const started = performance.now();
      expect((await fetch(`${url}/healthz`)).status).to.equal(200);
      expect(await within(5_000, async () => output.includes('"path":"/healthz"'))).to.equal(true);
      expect(performance.now() - started).to.be.below(LOG_FLUSH_MS + 250);
      expect(await droppedOnMetrics(url)).to.equal(0);
    });

    it('writes the lines still waiting when it stops', async () => {
      const { child, url } = await start();
      let output = '';
      child.stdout!.on('data', (chunk) => {
        output += String(chunk);
      });
      // Answered, then stopped at once: well before the next flush tick, the line still waits.
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
      expect(output).to.include('"path":"/readyz"');
    });

    it('drops and counts lines while nothing reads its output, and stays up @slow', async function () {
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
