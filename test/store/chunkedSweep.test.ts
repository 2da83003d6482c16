/** Periodic sweeps in bounded chunks (chunkedSweep.ts): the change-log prune on a real store. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { afterDeleteChunk, afterFindPage, START_PRUNE } from '../../src/store/embedded/changeLog.js';
import { ChunkedSweep, chunkWasFull } from '../../src/store/embedded/chunkedSweep.js';
import { createEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/index.js';
import type { DataScope } from '../../src/store/port.js';
import { firstVersion, putWrite } from './fixtures.js';

const RETENTION_MS = 3_600_000;
const OLD = new Date(Date.now() - 2 * RETENTION_MS).toISOString();
const scope: DataScope = { projectId: 'prj_sweep', env: 'live' };

describe('chunked sweeps', () => {
  describe('chunking decisions (pure)', () => {
    it('only a full chunk goes on', () => {
      expect(chunkWasFull(999, 1000)).to.equal(false);
      expect(chunkWasFull(1000, 1000)).to.equal(true);
      expect(chunkWasFull(0, 1)).to.equal(false);
    });

    it('finds the newest expired seq over pages, then deletes up to it', () => {
      expect(START_PRUNE).to.deep.equal({ phase: 'find', after: { timestamp: '', seq: 0 }, boundary: null });
      const full = afterFindPage(
        { phase: 'find', after: { timestamp: '', seq: 0 }, boundary: null },
        [
          { timestamp: 'a', seq: 7 },
          { timestamp: 'b', seq: 3 },
        ],
        2,
      );
      expect(full).to.deep.equal({ phase: 'find', after: { timestamp: 'b', seq: 3 }, boundary: 7 });
      if (full.phase !== 'find') throw new Error('unreachable');
      expect(afterFindPage(full, [{ timestamp: 'c', seq: 5 }], 2)).to.deep.equal({
        phase: 'delete',
        boundary: 7,
      });
      expect(afterFindPage(full, [], 2)).to.deep.equal({ phase: 'delete', boundary: 7 });
      expect(
        afterFindPage({ phase: 'find', after: { timestamp: '', seq: 0 }, boundary: null }, [], 2),
      ).to.deep.equal({
        phase: 'done',
      });
      expect(afterDeleteChunk({ phase: 'delete', boundary: 7 }, 2, 2)).to.deep.equal({
        phase: 'delete',
        boundary: 7,
      });
      expect(afterDeleteChunk({ phase: 'delete', boundary: 7 }, 1, 2)).to.deep.equal({ phase: 'done' });
    });

    it('refuses a chunk size below 1', () => {
      expect(() => new ChunkedSweep(0)).to.throw(RangeError);
      expect(new ChunkedSweep(1).chunkRows).to.equal(1);
    });
  });

  describe('the change-log prune on a real store', () => {
    let store: EmbeddedStore | null = null;
    let dataDir = '';

    async function open(chunkRows: number): Promise<EmbeddedStore> {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-sweep-'));
      store = createEmbeddedStore({ dataDir, eventRetentionMs: RETENTION_MS, sweepChunkRows: chunkRows });
      await store.init();
      return store;
    }

    /** Appends change rows with the given timestamps, in seq order. */
    function append(s: EmbeddedStore, timestamps: string[]): void {
      const insert = s.db.prepare(
        "INSERT INTO changes (scope, collection, type, doc_id, document, timestamp) VALUES ('prj_sweep/live', 'things', 'create', ?, '{}', ?)",
      );
      s.db.transaction(() => {
        for (const [i, t] of timestamps.entries()) insert.run(`doc_${i}`, t);
      })();
    }

    const seqs = (s: EmbeddedStore) =>
      s.db
        .prepare<[], { seq: number }>('SELECT seq FROM changes ORDER BY seq')
        .all()
        .map((r) => r.seq);

    afterEach(async () => {
      await store?.close();
      store = null;
      await rm(dataDir, { recursive: true, force: true });
    });

    for (const expired of [5, 6]) {
      it(`removes all ${expired} expired rows with chunks of 5, keeping the live ones`, async () => {
        const s = await open(5);
        const fresh = new Date().toISOString();
        append(s, [...Array<string>(expired).fill(OLD), fresh, fresh]);
        let turns = 0;
        const count = () => {
          turns++;
          if (s.changes.pruning) setImmediate(count);
        };
        const pruned = s.changes.prune();
        setImmediate(count);
        expect(await pruned).to.equal(expired);
        expect(seqs(s)).to.deep.equal([expired + 1, expired + 2]);
        // Find pages (one full), then delete chunks: other callbacks ran between them.
        expect(turns).to.be.at.least(2);
      });
    }

    it('deletes the prefix up to the newest expired row even when the clock stepped back', async () => {
      const s = await open(1);
      const fresh = new Date().toISOString();
      append(s, [OLD, fresh, OLD, fresh, fresh]);
      expect(await s.changes.prune()).to.equal(3);
      expect(seqs(s)).to.deep.equal([4, 5]);
      expect(s.changes.watch(scope, 'things', { after: '2' }).endedBy).to.equal('history_lost');
      expect(s.changes.watch(scope, 'things', { after: '3' }).endedBy).to.equal(null);
    });

    it('lets a write commit and a timer fire while a sweep of many chunks runs', async () => {
      const s = await open(10);
      append(s, Array<string>(500).fill(OLD));
      const order: string[] = [];
      const pruned = s.changes.prune().then((n) => {
        order.push('pruned');
        return n;
      });
      setTimeout(() => order.push('timer'), 0);
      const document = firstVersion({});
      await s.documents.commit(scope, 'things', [putWrite(document)]);
      order.push('write');
      expect(await pruned).to.equal(500);
      expect(order.indexOf('write')).to.be.lessThan(order.indexOf('pruned'));
      expect(order.indexOf('timer')).to.be.lessThan(order.indexOf('pruned'));
      // The write's own event stays: it is younger than the retention.
      expect(seqs(s)).to.deep.equal([501]);
    });

    it('never runs two prunes at once: a second waits for the first', async () => {
      const s = await open(10);
      append(s, Array<string>(100).fill(OLD));
      const first = s.changes.prune();
      expect(s.changes.pruning).to.equal(true);
      const second = s.changes.prune();
      expect(await first).to.equal(100);
      expect(await second).to.equal(0);
      expect(s.changes.pruning).to.equal(false);
    });

    it('stops cleanly when the store closes during a sweep, leaving a contiguous log', async () => {
      const s = await open(10);
      append(s, [...Array<string>(1000).fill(OLD), new Date().toISOString()]);
      const pruned = s.changes.prune();
      // Let a few chunks run, then close mid-sweep.
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      await s.close();
      const removed = await pruned;
      expect(removed).to.be.below(1000);
      store = createEmbeddedStore({ dataDir, eventRetentionMs: RETENTION_MS, sweepChunkRows: 10 });
      // Reopening prunes the rest (in the background); once done only the live row is left.
      await store.init();
      const reopened = store;
      const left = seqs(reopened);
      expect(left.at(-1)).to.equal(1001);
      expect(left).to.deep.equal(Array.from({ length: left.length }, (_, i) => left[0]! + i));
      await reopened.changes.prune();
      expect(seqs(reopened)).to.deep.equal([1001]);
    });
  });
});
