/**
 * Webhook bodies waiting for a retry, on SQLite: one row per event (`webhook_bodies`), whatever
 * the number of webhooks; the retry jobs name it by `data.bodyKey`. Created here, idempotently,
 * like the job table (a store that never schedules a retry never has rows).
 */
import type Database from 'better-sqlite3';
import { DELIVERY_JOB } from '../../jobs/webhookDelivery.js';
import type { DeliveryBodyRepository } from '../port.js';
import { GroupCommit } from './groupCommit.js';
import { BODY_KEY_EXPRESSION, JOBS_TABLE } from './jobs/schema.js';

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
  #remove: Database.Statement<{ now: number; name: string }> | null = null;
  #sweptAt = Date.now();

  constructor(db: Database.Database) {
    this.#db = db;
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
   * finds its body.
   */
  async removeExpired(nowMs: number): Promise<number> {
    this.#sweptAt = nowMs;
    if (!this.#remove) {
      const hasJobs = this.#db
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?")
        .get(JOBS_TABLE);
      // No job table yet (no job ever saved here): nothing can name a body.
      if (!hasJobs) {
        return this.#db.prepare('DELETE FROM webhook_bodies WHERE keep_until < ?').run(nowMs).changes;
      }
      this.#remove = this.#db.prepare(
        `DELETE FROM webhook_bodies WHERE keep_until < @now AND NOT EXISTS (
           SELECT 1 FROM ${JOBS_TABLE} j
           WHERE j.name = @name AND ${BODY_KEY_EXPRESSION.replace('data', 'j.data')} = json_quote(webhook_bodies.key)
             AND (j.next_run_at IS NOT NULL OR j.locked_at IS NOT NULL))`,
      );
    }
    return this.#remove.run({ now: nowMs, name: DELIVERY_JOB }).changes;
  }
}
