/**
 * Feed consumers on SQLite: a lease and a saved position per name. The embedded store serves one
 * process, so the lease only matters within it; each change is one statement, atomic as is.
 */
import type Database from 'better-sqlite3';
import type { FeedConsumerRepository } from '../../port.js';

interface LeaseParams {
  name: string;
  holder: string;
  now: number;
  expires: number;
}

export class EmbeddedFeedConsumers implements FeedConsumerRepository {
  readonly #acquire: Database.Statement<LeaseParams, { holder: string }>;
  readonly #release: Database.Statement<[string, string]>;
  readonly #position: Database.Statement<[string], { position: string | null }>;
  readonly #save: Database.Statement<{ name: string; holder: string; now: number; position: string }>;

  constructor(db: Database.Database) {
    this.#acquire = db.prepare(
      `INSERT INTO feed_consumers (name, holder, lease_expires_ms) VALUES (@name, @holder, @expires)
       ON CONFLICT (name) DO UPDATE SET holder = @holder, lease_expires_ms = @expires
         WHERE feed_consumers.holder IS NULL OR feed_consumers.holder = @holder
            OR feed_consumers.lease_expires_ms <= @now
       RETURNING holder`,
    );
    this.#release = db.prepare(
      'UPDATE feed_consumers SET holder = NULL, lease_expires_ms = NULL WHERE name = ? AND holder = ?',
    );
    this.#position = db.prepare('SELECT position FROM feed_consumers WHERE name = ?');
    this.#save = db.prepare(
      `UPDATE feed_consumers SET position = @position
       WHERE name = @name AND holder = @holder AND lease_expires_ms > @now`,
    );
  }

  async acquire(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const now = Date.now();
    return this.#acquire.get({ name, holder, now, expires: now + ttlMs })?.holder === holder;
  }

  async release(name: string, holder: string): Promise<void> {
    this.#release.run(name, holder);
  }

  async position(name: string): Promise<string | null> {
    return this.#position.get(name)?.position ?? null;
  }

  async savePosition(name: string, holder: string, position: string): Promise<boolean> {
    return this.#save.run({ name, holder, now: Date.now(), position }).changes === 1;
  }
}
