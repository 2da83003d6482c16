/**
 * Feed consumers in the system database (`feedConsumers`): one document per name with its lease
 * and saved position. Lease expiry is computed and compared with the server's clock (`$$NOW`),
 * so instances whose clocks disagree still agree on who holds it.
 */
import type { Collection, Db } from 'mongodb';
import type { FeedConsumerRepository } from '../../port.js';
import { takeByUpsert } from '../database/takeByUpsert.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';
import { leaseHeldFilter, leaseTakeFilter, leaseTakeUpdate } from '../webhooks/webhookUpdates.js';

interface ConsumerDoc {
  _id: string;
  holder: string | null;
  leaseExpiresAt: Date | null;
  position?: string;
}

export class MongoFeedConsumers implements FeedConsumerRepository {
  readonly #consumers: Collection<ConsumerDoc>;

  constructor(db: Db) {
    this.#consumers = db.collection<ConsumerDoc>(SYSTEM_COLLECTIONS.feedConsumers);
  }

  acquire(name: string, holder: string, ttlMs: number): Promise<boolean> {
    return takeByUpsert(this.#consumers, leaseTakeFilter(name, holder), leaseTakeUpdate(holder, ttlMs));
  }

  async release(name: string, holder: string): Promise<void> {
    await this.#consumers.updateOne({ _id: name, holder }, { $set: { holder: null, leaseExpiresAt: null } });
  }

  async position(name: string): Promise<string | null> {
    const doc = await this.#consumers.findOne({ _id: name }, { projection: { position: 1 } });
    return doc?.position ?? null;
  }

  async savePosition(name: string, holder: string, position: string): Promise<boolean> {
    const result = await this.#consumers.updateOne(leaseHeldFilter(name, holder), { $set: { position } });
    return result.matchedCount === 1;
  }
}
