/**
 * The change-log prune after a large import ages out (embedded store): 250,000 expired change
 * rows (plus 1,000 live ones), pruned the way the store did before (one DELETE of the whole
 * prefix) and the way it does now (chunks of SWEEP_CHUNK_ROWS, yielding between them). Reports
 * the longest the event loop was held: a setImmediate probe's longest gap between two of its
 * turns, and perf_hooks' monitorEventLoopDelay maximum. Alone:
 * `node --import tsx bench/changePrune.ts` (BENCH_PRUNE_ROWS, BENCH_PRUNE_CHUNK to vary;
 * BENCH_PRUNE_NO_CHECKPOINTER=1 leaves checkpoints to SQLite: the few turns over 10 ms in a
 * chunked prune coincide with the worker thread's checkpoints, on a 2-core machine).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createEmbeddedStore, type EmbeddedStore } from '../src/store/embedded/index.js';

const ROWS = Number(process.env.BENCH_PRUNE_ROWS ?? 250_000);
const CHUNK = process.env.BENCH_PRUNE_CHUNK ? Number(process.env.BENCH_PRUNE_CHUNK) : undefined;
const RETENTION_MS = 3_600_000;
const CHECKPOINTER = process.env.BENCH_PRUNE_NO_CHECKPOINTER !== '1';

async function filledStore(): Promise<{ store: EmbeddedStore; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'folio-prune-'));
  const store = createEmbeddedStore({
    dataDir,
    eventRetentionMs: RETENTION_MS,
    sweepChunkRows: CHUNK,
    backgroundCheckpoints: CHECKPOINTER,
  });
  await store.init();
  const old = new Date(Date.now() - 2 * RETENTION_MS).toISOString();
  const fresh = new Date().toISOString();
  const fill = store.db.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO changes (scope, collection, type, doc_id, document, timestamp)
     SELECT 'prj_bench/live', 'imported', 'create', 'doc_' || i,
            json_object('_id', 'doc_' || i, 'name', 'row ' || i, 'pad', printf('%.150c', 'x')), ?
     FROM n`,
  );
  store.db.transaction(() => {
    fill.run(ROWS, old);
    fill.run(1000, fresh);
  })();
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  return { store, dataDir };
}

/** Runs `work` while measuring the longest event-loop block; ms. */
async function longestBlock(
  work: () => Promise<unknown>,
): Promise<{ gapMs: number; delayMaxMs: number; p50Ms: number; over10: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let last = performance.now();
  let gap = 0;
  const gaps: number[] = [];
  let probing = true;
  const probe = () => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    gaps.push(now - last);
    last = now;
    if (probing) setImmediate(probe);
  };
  histogram.enable();
  setImmediate(probe);
  await new Promise((resolve) => setTimeout(resolve, 20));
  await work();
  probing = false;
  await new Promise((resolve) => setTimeout(resolve, 20));
  histogram.disable();
  // The turns that held the loop (a chunk, or the one statement), not the probe's idle turns.
  const busy = gaps.filter((ms) => ms > 1).sort((a, b) => a - b);
  return {
    gapMs: gap,
    delayMaxMs: histogram.max / 1e6,
    p50Ms: busy[Math.floor(busy.length / 2)] ?? 0,
    over10: busy.filter((ms) => ms > 10).length,
  };
}

function remaining(store: EmbeddedStore): number {
  return store.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM changes').get()!.n;
}

async function main(): Promise<void> {
  const rounds = Number(process.env.BENCH_PRUNE_ROUNDS ?? 3);
  for (let round = 1; round <= rounds; round++) {
    // Before: the one statement the prune used to be.
    {
      const { store, dataDir } = await filledStore();
      const cutoff = new Date(Date.now() - RETENTION_MS).toISOString();
      let statementMs = 0;
      const block = await longestBlock(async () => {
        const t0 = performance.now();
        store.db
          .prepare('DELETE FROM changes WHERE seq <= (SELECT max(seq) FROM changes WHERE timestamp < ?)')
          .run(cutoff);
        statementMs = performance.now() - t0;
      });
      console.log(
        `round ${round} before: one DELETE ${statementMs.toFixed(1)} ms; longest block ${block.gapMs.toFixed(1)} ms (delay max ${block.delayMaxMs.toFixed(1)} ms); left ${remaining(store)}`,
      );
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    }
    // After: the store's own prune.
    {
      const { store, dataDir } = await filledStore();
      let removed = 0;
      const t0 = performance.now();
      const block = await longestBlock(async () => {
        removed = await store.changes.prune();
      });
      const totalMs = performance.now() - t0 - 40;
      console.log(
        `round ${round} after:  ${removed} rows in ~${totalMs.toFixed(0)} ms wall; longest block ${block.gapMs.toFixed(1)} ms (delay max ${block.delayMaxMs.toFixed(1)} ms); median busy turn ${block.p50Ms.toFixed(1)} ms, ${block.over10} over 10 ms; left ${remaining(store)}`,
      );
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
}

await main();
