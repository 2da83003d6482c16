/**
 * Webhooks in the system database (`webhooks`), shared by every instance. A webhook's failure
 * count and disabling change in one pipeline update (webhookUpdates.ts).
 */
import type { Collection, Db, MongoClient } from 'mongodb';
import {
  type DataScope,
  DuplicateError,
  type WebhookChanges,
  type WebhookRecord,
  type WebhookRepository,
} from '../../port.js';
import { type GuardDoc, guardId, insertWhileBelow } from '../database/guards.js';
import { isDuplicateKeyError } from '../database/serverErrors.js';
import { inTransaction, type WriteLimits } from '../database/transactions.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';
import { failurePipeline } from './webhookUpdates.js';

export type WebhookDoc = Omit<WebhookRecord, 'id' | 'scope'> & {
  _id: string;
  projectId: string;
  env: DataScope['env'];
};

/** A document of the settings collection (guards, the sealed-secret key): an id and a text. */
type SettingDoc = GuardDoc;

export const SEALING_KEY_SETTING = 'webhookSealingKey';

export function toWebhookDoc(w: WebhookRecord): WebhookDoc {
  return {
    _id: w.id,
    projectId: w.scope.projectId,
    env: w.scope.env,
    collection: w.collection,
    url: w.url,
    events: w.events,
    description: w.description,
    status: w.status,
    sealedSecret: w.sealedSecret,
    consecutiveFailures: w.consecutiveFailures,
    createdAt: w.createdAt,
    updatedAt: w.updatedAt,
  };
}

export function fromWebhookDoc(d: WebhookDoc): WebhookRecord {
  return {
    id: d._id,
    scope: { projectId: d.projectId, env: d.env },
    collection: d.collection,
    url: d.url,
    events: d.events,
    description: d.description,
    status: d.status,
    sealedSecret: d.sealedSecret,
    consecutiveFailures: d.consecutiveFailures,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

function at(scope: DataScope, collection: string) {
  return { projectId: scope.projectId, env: scope.env, collection };
}

const OLDEST_FIRST = { createdAt: 1, _id: 1 } as const;

export class MongoWebhooks implements WebhookRepository {
  readonly #webhooks: Collection<WebhookDoc>;
  readonly #deliveries: Collection<{ _id: string; webhookId: string }>;
  readonly #settings: Collection<SettingDoc>;

  constructor(
    private readonly client: MongoClient,
    db: Db,
    private readonly limits: WriteLimits,
  ) {
    this.#webhooks = db.collection<WebhookDoc>(SYSTEM_COLLECTIONS.webhooks);
    this.#deliveries = db.collection(SYSTEM_COLLECTIONS.webhookDeliveries);
    this.#settings = db.collection<SettingDoc>(SYSTEM_COLLECTIONS.settings);
  }

  async create(webhook: WebhookRecord, maxPerCollection: number): Promise<boolean> {
    try {
      const { result } = await inTransaction(this.client, this.limits, (session) =>
        insertWhileBelow(
          session,
          {
            settings: this.#settings,
            id: guardId({ kind: 'webhooks', scope: webhook.scope, collection: webhook.collection }),
            writer: webhook.id,
          },
          maxPerCollection,
          () => this.#webhooks.countDocuments(at(webhook.scope, webhook.collection), { session }),
          () => this.#webhooks.insertOne(toWebhookDoc(webhook), { session }),
        ),
      );
      return result;
    } catch (error) {
      if (isDuplicateKeyError(error)) throw new DuplicateError('id');
      throw error;
    }
  }

  async get(scope: DataScope, collection: string, id: string): Promise<WebhookRecord | null> {
    const doc = await this.#webhooks.findOne({ _id: id, ...at(scope, collection) });
    return doc ? fromWebhookDoc(doc) : null;
  }

  async list(scope: DataScope, collection: string): Promise<WebhookRecord[]> {
    const docs = await this.#webhooks.find(at(scope, collection), { sort: OLDEST_FIRST }).toArray();
    return docs.map(fromWebhookDoc);
  }

  async count(scope: DataScope, collection: string): Promise<number> {
    return this.#webhooks.countDocuments(at(scope, collection));
  }

  async listActive(scope: DataScope, collection: string, event: string): Promise<WebhookRecord[]> {
    const docs = await this.#webhooks
      .find({ ...at(scope, collection), status: 'active', events: event }, { sort: OLDEST_FIRST })
      .toArray();
    return docs.map(fromWebhookDoc);
  }

  async update(
    scope: DataScope,
    collection: string,
    id: string,
    changes: WebhookChanges,
  ): Promise<WebhookRecord | null> {
    const doc = await this.#webhooks.findOneAndUpdate(
      { _id: id, ...at(scope, collection) },
      { $set: changes },
      { returnDocument: 'after' },
    );
    return doc ? fromWebhookDoc(doc) : null;
  }

  async delete(scope: DataScope, collection: string, id: string): Promise<boolean> {
    const { result } = await inTransaction(this.client, this.limits, async (session) => {
      const deleted = await this.#webhooks.deleteOne({ _id: id, ...at(scope, collection) }, { session });
      if (deleted.deletedCount === 1) await this.#deliveries.deleteMany({ webhookId: id }, { session });
      return deleted.deletedCount === 1;
    });
    return result;
  }

  async recordSuccess(id: string): Promise<void> {
    await this.#webhooks.updateOne(
      { _id: id, consecutiveFailures: { $ne: 0 } },
      { $set: { consecutiveFailures: 0 } },
    );
  }

  async recordFailure(id: string, disableAt: number, when: string): Promise<WebhookRecord | null> {
    const doc = await this.#webhooks.findOneAndUpdate({ _id: id }, failurePipeline(disableAt, when), {
      returnDocument: 'after',
    });
    return doc ? fromWebhookDoc(doc) : null;
  }

  async sealingKey(generate: () => Buffer): Promise<Buffer> {
    const existing = await this.#settings.findOne({ _id: SEALING_KEY_SETTING });
    if (existing) return Buffer.from(existing.value, 'base64');
    try {
      await this.#settings.insertOne({ _id: SEALING_KEY_SETTING, value: generate().toString('base64') });
    } catch (error) {
      // Another instance stored its key first: that one stands.
      if (!isDuplicateKeyError(error)) throw error;
    }
    const stored = await this.#settings.findOne({ _id: SEALING_KEY_SETTING });
    if (!stored) throw new Error('the webhook sealing key could not be stored');
    return Buffer.from(stored.value, 'base64');
  }
}
