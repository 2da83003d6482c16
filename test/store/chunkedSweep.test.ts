/** Periodic sweeps in bounded chunks (chunkedSweep.ts): the change-log prune on a real store. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { SWEEP_BATCH, TrashSweeper } from '../../src/services/trash/sweeper.js';
import { DELIVERY_JOB } from '../../src/store/deliveryJob.js';
import { afterDeleteChunk, afterFindPage, START_PRUNE } from '../../src/store/embedded/changes/changeLog.js';
import {
  ChunkedSweep,
  chunkWasFull,
  nextCursor,
  RANGE_START,
} from '../../src/store/embedded/database/chunkedSweep.js';
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

    it('walks a range by cursor: on after a full page, done after a short one', () => {
      const page = [
        { at: 5, rowid: 9 },
        { at: 6, rowid: 2 },
      ];
      expect(nextCursor(page, 2)).to.deep.equal({ at: 6, rowid: 2 });
      expect(nextCursor(page, 3)).to.equal(null);
      expect(nextCursor([], 1)).to.equal(null);
      expect(RANGE_START.at).to.be.below(0);
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
  describe('the other embedded sweeps, chunk by chunk', () => {
    let store: EmbeddedStore | null = null;
    let dataDir = '';
    const CHUNK = 2;

    async function open(): Promise<EmbeddedStore> {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-sweep-'));
      store = createEmbeddedStore({ dataDir, eventRetentionMs: RETENTION_MS, sweepChunkRows: CHUNK });
      await store.init();
      return store;
    }

    afterEach(async () => {
      await store?.close();
      store = null;
      await rm(dataDir, { recursive: true, force: true });
    });

    const plan = (s: EmbeddedStore, sql: string, params: Record<string, unknown>) =>
      s.db
        .prepare<[Record<string, unknown>], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`)
        .all(params)
        .map((row) => row.detail)
        .join(' | ');

    for (const removable of [CHUNK, CHUNK + 1]) {
      it(`removes ${removable} finished jobs, walking past failed ones that fill whole chunks`, async () => {
        const s = await open();
        const repository = s.agendaBackend()
          .repository as import('../../src/store/embedded/jobs/repository.js').EmbeddedJobRepository;
        await repository.connect();
        const cutoff = Date.now();
        const job = (finishedMs: number, failed: boolean) =>
          repository.saveJob(
            {
              name: 'd',
              type: 'normal',
              priority: 0,
              data: {},
              nextRunAt: null,
              lastFinishedAt: new Date(finishedMs),
              ...(failed ? { failedAt: new Date(finishedMs) } : {}),
            },
            undefined,
          );
        // The oldest rows of the range fail last: a whole chunk that removes nothing.
        for (let i = 0; i < CHUNK; i++) await job(cutoff - 1000 + i, true);
        for (let i = 0; i < removable; i++) await job(cutoff - 500 + i, false);
        await job(cutoff, false); // at the cutoff: kept
        expect(await repository.removeCompletedBefore('d', cutoff)).to.equal(removable);
        expect((await repository.queryJobs({ name: 'd' })).total).to.equal(CHUNK + 1);
      });

      it(`removes ${removable} expired webhook bodies, walking past those a pending retry names`, async () => {
        const s = await open();
        const now = Date.now();
        const repository = s.agendaBackend().repository;
        await repository.connect();
        // The oldest bodies are still named by a retry waiting to run: kept, a whole chunk of them.
        for (let i = 0; i < CHUNK; i++) {
          await s.deliveryBodies.keep(`named_${i}`, '{}', now - 1000 + i);
          await repository.saveJob(
            {
              name: DELIVERY_JOB,
              type: 'normal',
              priority: 0,
              data: { bodyKey: `named_${i}` },
              nextRunAt: new Date(now + 60_000),
            },
            undefined,
          );
        }
        for (let i = 0; i < removable; i++) await s.deliveryBodies.keep(`free_${i}`, '{}', now - 500 + i);
        await s.deliveryBodies.keep('live', '{}', now + 60_000);
        expect(await s.deliveryBodies.removeExpired(now)).to.equal(removable);
        const keys = s.db
          .prepare<[], { key: string }>('SELECT key FROM webhook_bodies ORDER BY key')
          .all()
          .map((row) => row.key);
        expect(keys).to.deep.equal(['live', ...Array.from({ length: CHUNK }, (_, i) => `named_${i}`)]);
      });

      it(`sweeps ${removable} expired sessions when a session is created`, async () => {
        const s = await open();
        const createdAt = new Date().toISOString();
        await s.accounts.createAccount({
          id: 'acc_1',
          email: 'a@example.test',
          passwordHash: 'x',
          plan: 'free',
          createdAt,
        });
        const insert = s.db.prepare(
          "INSERT INTO sessions (token_hash, account_id, created_at, expires_at) VALUES (?, 'acc_1', ?, ?)",
        );
        const past = new Date(Date.now() - 60_000).toISOString();
        for (let i = 0; i < removable; i++) insert.run(`old_${i}`, past, past);
        const later = new Date(Date.now() + 60_000).toISOString();
        await s.accounts.createSession({ tokenHash: 'new', accountId: 'acc_1', createdAt, expiresAt: later });
        const left = s.db
          .prepare<[], { token_hash: string }>('SELECT token_hash FROM sessions')
          .all()
          .map((row) => row.token_hash);
        expect(left).to.deep.equal(['new']);
      });
    }

    it('every sweep statement reads its range through an index', async () => {
      const s = await open();
      await s.agendaBackend().repository.connect();
      const page = { afterAt: 0, afterRowid: 0, rows: 2 };
      const { rangePageSql } = await import('../../src/store/embedded/database/chunkedSweep.js');
      expect(
        plan(
          s,
          rangePageSql('webhook_bodies', 'webhook_bodies_keep_until', 'keep_until', 'keep_until < @now'),
          {
            ...page,
            now: 1,
          },
        ),
      ).to.match(/keep_until=\? AND rowid>\?.*keep_until>\? AND keep_until<\?/);
      expect(
        plan(
          s,
          rangePageSql(
            'agenda_jobs',
            'agenda_jobs_finished',
            'last_finished_at',
            'name = @name AND next_run_at IS NULL AND locked_at IS NULL AND last_finished_at < @before',
          ),
          { ...page, name: 'd', before: 1 },
        ),
      ).to.match(/agenda_jobs_finished \(name=\? AND last_finished_at=\? AND rowid>\?\)/);
      expect(
        plan(
          s,
          'DELETE FROM changes WHERE seq IN (SELECT seq FROM changes WHERE seq <= @b ORDER BY seq LIMIT CAST(@n AS INTEGER))',
          {
            b: 1,
            n: 2,
          },
        ),
      ).to.match(/INTEGER PRIMARY KEY \(rowid<\?\)/);
      expect(
        plan(
          s,
          'DELETE FROM sessions WHERE rowid IN (SELECT rowid FROM sessions WHERE expires_at <= @now ORDER BY expires_at LIMIT CAST(@n AS INTEGER))',
          { now: 'x', n: 2 },
        ),
      ).to.match(/COVERING INDEX sessions_expires/);
      // The trash sweep's erasure scrubs an id's events through their own index, not by walking
      // every event of the collection.
      expect(
        plan(
          s,
          "UPDATE changes INDEXED BY changes_doc SET document = '{}' WHERE scope = @s AND collection = @c AND doc_id = @d",
          { s: 'x', c: 'y', d: 'z' },
        ),
      ).to.match(/USING INDEX changes_doc \(doc_id=\?\)/);
    });
  });
  describe('the trash sweeper, round by round', () => {
    let store: EmbeddedStore | null = null;
    let dataDir = '';

    afterEach(async () => {
      await store?.close();
      store = null;
      await rm(dataDir, { recursive: true, force: true });
    });

    async function withExpiredTrash(entries: number): Promise<EmbeddedStore> {
      dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-sweep-'));
      store = createEmbeddedStore({ dataDir, eventRetentionMs: RETENTION_MS });
      await store.init();
      store.db
        .prepare(
          `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
           INSERT INTO trash (scope, collection, id, version, deleted_at, api_key_hint, expires_at, body)
           SELECT 'prj_sweep/live', 'things', 'doc_' || i, 1, ?, 'h', ?, '{}' FROM n`,
        )
        .run(entries, OLD, OLD);
      return store;
    }

    const left = (s: EmbeddedStore) =>
      s.db.prepare<[], { n: number }>('SELECT count(*) AS n FROM trash').get()!.n;

    it('erases more than one round, letting other callbacks run between rounds', async () => {
      const s = await withExpiredTrash(SWEEP_BATCH + 1);
      const sweeper = new TrashSweeper(s, pino({ level: 'silent' }));
      const order: string[] = [];
      // Queued before the sweep: it runs between the rounds only if the sweep yields to the
      // event loop (awaiting the store's synchronous rounds alone would not).
      setImmediate(() => order.push('other'));
      const swept = sweeper.sweep().then((n) => {
        order.push('swept');
        return n;
      });
      expect(await swept).to.equal(SWEEP_BATCH + 1);
      expect(order).to.deep.equal(['other', 'swept']);
      expect(left(s)).to.equal(0);
    });

    it('stops between rounds when stopped, and sweeps again once started', async () => {
      const s = await withExpiredTrash(2 * SWEEP_BATCH + 1);
      const sweeper = new TrashSweeper(s, pino({ level: 'silent' }));
      const swept = sweeper.sweep();
      await sweeper.stop();
      expect(await swept).to.equal(SWEEP_BATCH);
      expect(left(s)).to.equal(SWEEP_BATCH + 1);
      sweeper.start(3_600_000);
      expect(await sweeper.sweep()).to.equal(SWEEP_BATCH + 1);
      await sweeper.stop();
    });
  });
});
