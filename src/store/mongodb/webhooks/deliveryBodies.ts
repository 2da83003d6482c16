/**
 * Webhook bodies waiting for a retry in the system database (`webhookBodies`): one document per
 * event, whatever the number of webhooks; retry jobs name it by `data.bodyKey`. The TTL index
 * on `expiresAt` removes a body once its time passed (each retry scheduled pushes it later).
 */
import type { Collection, Db } from 'mongodb';
import type { DeliveryBodyRepository } from '../../port.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';
import { deliveryBodyExtendUpdate, deliveryBodyKeepUpdate } from './webhookUpdates.js';

interface DeliveryBodyDoc {
  _id: string;
  body: string;
  expiresAt: Date;
}

export class MongoDeliveryBodies implements DeliveryBodyRepository {
  readonly #bodies: Collection<DeliveryBodyDoc>;

  constructor(db: Db) {
    this.#bodies = db.collection<DeliveryBodyDoc>(SYSTEM_COLLECTIONS.webhookBodies);
  }

  async keep(key: string, body: string, keepUntilMs: number): Promise<void> {
    // Usually kept already (another webhook of the change): only its time, no body on the wire.
    const extended = await this.#bodies.updateOne({ _id: key }, deliveryBodyExtendUpdate(keepUntilMs));
    if (extended.matchedCount === 1) return;
    const update = deliveryBodyKeepUpdate(body, keepUntilMs);
    try {
      await this.#bodies.updateOne({ _id: key }, update, { upsert: true });
    } catch (error) {
      // Two instances upserting one new key: one insert wins, the other collides (E11000);
      // run as an update again, it now matches the winner's document.
      if (!isDuplicateKeyError(error)) throw error;
      await this.#bodies.updateOne({ _id: key }, update, { upsert: true });
    }
  }

  async get(key: string): Promise<string | null> {
    const doc = await this.#bodies.findOne({ _id: key }, { projection: { body: 1 } });
    return doc?.body ?? null;
  }

  /** The TTL index does this by itself; this removes what its monitor has not reached yet. */
  async removeExpired(nowMs: number): Promise<number> {
    const result = await this.#bodies.deleteMany({ expiresAt: { $lt: new Date(nowMs) } });
    return result.deletedCount;
  }
}
