/**
 * Webhook bodies waiting for a retry, on SQLite: one row per event (`webhook_bodies`), whatever
 * the number of webhooks; the retry jobs name it by `data.bodyKey`. Created here, idempotently,
 * like the job table (a store that never schedules a retry never has rows).
 */
import type Database from 'better-sqlite3';
import { DELIVERY_JOB } from '../../deliveryJob.js';
import type { DeliveryBodyRepository } from '../../port.js';
import { ChunkedSweep, type RangeCursor, rangePageSql } from '../database/chunkedSweep.js';
import { GroupCommit } from '../documents/groupCommit.js';
import { BODY_KEY_EXPRESSION, JOBS_TABLE } from '../jobs/schema.js';

/** Expired bodies are removed at most this often on `keep` (besides the job runner's sweep). */
const SWEEP_EVERY_MS = 60_000;

export class EmbeddedDeliveryBodies implements DeliveryBodyRepository {
  readonly #db: Database.Database;
  readonly #keep: Database.Statement<{ key: string; body: string; until: number }>;
  /**
   * Keeps arriving together share one transaction committed without its own sync: the job
   * that names the body is saved after it on the same connection, durably, and syncing the WAL
   * carries every frame before it, so a job on disk always has its body (a burst of hand-overs
   * paid one sync per body before).
   */
  readonly #keeps: GroupCommit<{ key: string; body: string; until: number }, void>;
  readonly #get: Database.Statement<[string], { body: string }>;
  /** Expired bodies after a cursor, in keep_until order (chunkedSweep.ts). */
  readonly #expiredPage: Database.Statement<
    { now: number; afterAt: number; afterRowid: number; rows: number },
    RangeCursor
  >;
  readonly #removeListed: Database.Statement<{ ids: string }>;
  #removeListedUnnamed: Database.Statement<{ ids: string; name: string }> | null = null;
  readonly #sweeps: ChunkedSweep;
  #sweptAt = Date.now();

  constructor(db: Database.Database, options: { sweepChunkRows?: number | undefined } = {}) {
    this.#db = db;
    this.#sweeps = new ChunkedSweep(options.sweepChunkRows);
    db.exec(`
      CREATE TABLE IF NOT EXISTS webhook_bodies (
        key TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        keep_until INTEGER NOT NULL
      ) STRICT;
      CREATE INDEX IF NOT EXISTS webhook_bodies_keep_until ON webhook_bodies (keep_until);
    `);
    // A second keep of the same event (another webhook's retry) writes no body bytes: only the
    // time, and only later.
    this.#keep = db.prepare(
      `INSERT INTO webhook_bodies (key, body, keep_until) VALUES (@key, @body, @until)
       ON CONFLICT (key) DO UPDATE SET keep_until = max(keep_until, excluded.keep_until)
       WHERE excluded.keep_until > keep_until`,
    );
    this.#get = db.prepare('SELECT body FROM webhook_bodies WHERE key = ?');
    this.#expiredPage = db.prepare(
      rangePageSql('webhook_bodies', 'webhook_bodies_keep_until', 'keep_until', 'keep_until < @now'),
    );
    this.#removeListed = db.prepare(
      'DELETE FROM webhook_bodies WHERE rowid IN (SELECT value FROM json_each(@ids))',
    );
    this.#keeps = new GroupCommit(
      db,
      (row) => {
        this.#keep.run(row);
      },
      { afterCommit: () => {}, beforeDeferred: () => {} },
      { isolated: false },
    );
  }

  async keep(key: string, body: string, keepUntilMs: number): Promise<void> {
    await this.#keeps.commit({ key, body, until: keepUntilMs }, false);
    const now = Date.now();
    if (now - this.#sweptAt >= SWEEP_EVERY_MS) await this.removeExpired(now);
  }

  async get(key: string): Promise<string | null> {
    return this.#get.get(key)?.body ?? null;
  }

  /**
   * Expired bodies (a range of the keep_until index) that no unfinished delivery job names
   * (one indexed look-up each): a retry delayed past its time (a server down for long) still
   * finds its body. In chunks (chunkedSweep.ts), each its own short transaction, walking past
   * the bodies it keeps rather than looking at them again in every chunk.
   */
  removeExpired(nowMs: number): Promise<number> {
    this.#sweptAt = nowMs;
    return this.#sweeps.runRange(
      this.#db,
      (after, rows) =>
        this.#expiredPage.all({ now: nowMs, afterAt: after.at, afterRowid: after.rowid, rows }),
      () => this.#removeStatement(),
    );
  }

  /** No sweep chunk runs after this (the store is closing); waits for the one under way. */
  stopSweeps(): Promise<void> {
    return this.#sweeps.stop();
  }

  /** Removes the listed bodies, less those an unfinished delivery job names; how many went. */
  #removeStatement(): (ids: string) => number {
    if (!this.#removeListedUnnamed) {
      const hasJobs = this.#db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
        .get(JOBS_TABLE);
      // No job table yet (no job ever saved here): nothing can name a body.
      if (!hasJobs) return (ids) => this.#removeListed.run({ ids }).changes;
      this.#removeListedUnnamed = this.#db.prepare(
        `DELETE FROM webhook_bodies WHERE rowid IN (SELECT value FROM json_each(@ids)) AND NOT EXISTS (
           SELECT 1 FROM ${JOBS_TABLE} j
           WHERE j.name = @name AND ${BODY_KEY_EXPRESSION.replace('data', 'j.data')} = json_quote(webhook_bodies.key)
             AND (j.next_run_at IS NOT NULL OR j.locked_at IS NOT NULL))`,
      );
    }
    const remove = this.#removeListedUnnamed;
    return (ids) => remove.run({ ids, name: DELIVERY_JOB }).changes;
  }
}
