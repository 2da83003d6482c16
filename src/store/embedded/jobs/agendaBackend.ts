/**
 * Agenda's backend for the embedded store: jobs live in the store's own SQLite database, so
 * background jobs (webhook deliveries) run with no MongoDB.
 *
 * No notification channel: Agenda polls every `processEvery`, exactly as it does on the MongoDB
 * backend, so both stores schedule alike. An in-process channel would be easy to write but does
 * not fit a backend object that several Agenda instances may share: Agenda connects the channel
 * in `start()` and disconnects it (dropping every subscriber) in `stop()`, and it re-emits state
 * notifications as "remote" events, which in one process would duplicate local ones. A caller
 * that wants immediate pick-up can pass its own channel to one Agenda (`notificationChannel`
 * option, e.g. Agenda's InMemoryNotificationChannel).
 */
import type { AgendaBackend } from 'agenda';
import type Database from 'better-sqlite3';
import { EmbeddedJobRepository } from './repository.js';

export class EmbeddedAgendaBackend implements AgendaBackend {
  readonly name = 'SQLite (embedded)';
  readonly repository: EmbeddedJobRepository;
  readonly notificationChannel = undefined;
  /** The store opened the database and closes it; `agenda.stop()` must leave it open. */
  readonly ownsConnection = false;

  /** `db`: the store's better-sqlite3 handle (WAL, busy_timeout set by the store). */
  constructor(db: Database.Database, options: { sweepChunkRows?: number | undefined } = {}) {
    this.repository = new EmbeddedJobRepository(db, options);
  }

  /** Creates `agenda_jobs` and its indexes if missing. Idempotent: each Agenda calls it. */
  async connect(): Promise<void> {
    await this.repository.connect();
  }

  /** Nothing to release: the connection is the store's. */
  async disconnect(): Promise<void> {}
}
