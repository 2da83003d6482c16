/** Webhook delivery history in the system database (`webhookDeliveries`), one document per delivery. */
import type { Collection, Db } from 'mongodb';
import type { DeliveryRecord, DeliveryRepository } from '../../port.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';

export type DeliveryDoc = Omit<DeliveryRecord, 'id'> & { _id: string };

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;

function fromDoc({ _id, ...rest }: DeliveryDoc): DeliveryRecord {
  return { id: _id, ...rest };
}

export class MongoDeliveries implements DeliveryRepository {
  readonly #deliveries: Collection<DeliveryDoc>;

  constructor(db: Db) {
    this.#deliveries = db.collection<DeliveryDoc>(SYSTEM_COLLECTIONS.webhookDeliveries);
  }

  async save(delivery: DeliveryRecord, keep: number): Promise<void> {
    const { id, ...rest } = delivery;
    const result = await this.#deliveries.replaceOne({ _id: id }, rest, { upsert: true });
    if (result.upsertedCount !== 1) return;
    const beyond = await this.#deliveries
      .find({ webhookId: delivery.webhookId }, { sort: NEWEST_FIRST, skip: keep, projection: { _id: 1 } })
      .toArray();
    if (beyond.length === 0) return;
    await this.#deliveries.deleteMany({
      _id: { $in: beyond.map((d) => d._id) },
      status: { $ne: 'pending' },
    });
  }

  async get(id: string): Promise<DeliveryRecord | null> {
    const doc = await this.#deliveries.findOne({ _id: id });
    return doc ? fromDoc(doc) : null;
  }

  async list(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    const docs = await this.#deliveries.find({ webhookId }, { sort: NEWEST_FIRST, limit }).toArray();
    return docs.map(fromDoc);
  }
}
