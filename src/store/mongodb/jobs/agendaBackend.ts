/**
 * Agenda's backend for the MongoDB store: `@agendajs/mongo-backend`'s repository (with the
 * dedupe index, see repository.ts) and job logger, on the store's own connection. No
 * notification channel: Agenda polls, and a caller that wants immediate pick-up of its own
 * saves passes a channel to its Agenda (`notificationChannel`).
 */
import { MongoJobLogger } from '@agendajs/mongo-backend';
import type { AgendaBackend } from 'agenda';
import type { Db } from 'mongodb';
import { DedupingMongoJobRepository } from './repository.js';

export class MongoAgendaBackend implements AgendaBackend {
  readonly name = 'MongoDB';
  readonly repository: DedupingMongoJobRepository;
  readonly logger = new MongoJobLogger();
  readonly notificationChannel = undefined;
  /** The store opened the connection and closes it; `agenda.stop()` must leave it open. */
  readonly ownsConnection = false;

  constructor(db: Db, collection: string) {
    this.repository = new DedupingMongoJobRepository(db, collection);
  }

  async connect(): Promise<void> {
    await this.repository.connect();
    await this.logger.setDb(this.repository.getDb());
  }

  /** Nothing to release: the connection is the store's. */
  async disconnect(): Promise<void> {}
}
