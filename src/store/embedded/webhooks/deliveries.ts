/** Webhook delivery history on SQLite: one row per delivery, its attempts in a JSON body. */
import type Database from 'better-sqlite3';
import type { DeliveryRecord, DeliveryRepository, DeliveryStatus } from '../../port.js';
import { GroupCommit } from '../documents/groupCommit.js';
import { BOUND_COUNT, boundCount } from '../query/sqlLimit.js';

interface DeliveryRow {
  id: string;
  webhook_id: string;
  status: DeliveryStatus;
  created_at: string;
  body: string;
}

export class EmbeddedDeliveries implements DeliveryRepository {
  readonly #exists: Database.Statement<[string], { id: string }>;
  readonly #upsert: Database.Statement<DeliveryRow>;
  readonly #prune: Database.Statement<{ webhookId: string; keep: number }>;
  readonly #get: Database.Statement<[string], DeliveryRow>;
  readonly #list: Database.Statement<[string, number], DeliveryRow>;
  /**
   * Saves arriving in the same turn share one transaction, committed without waiting for the
   * disk (deferred): the next durable commit of the store (a document write, the dispatcher's
   * position) syncs them too. A process crash loses none (they are in the WAL); a power loss may
   * lose the last moments of history, never a delivery: a lost record makes its delivery look
   * new, so at worst it is attempted once more. The history of each webhook with new records is
   * pruned once per group, not once per save, and saves (plain upserts, nothing to conflict)
   * run without a savepoint each: a burst ran a prune and a savepoint for every (event, webhook).
   */
  readonly #saves: GroupCommit<{ delivery: DeliveryRecord; keep: number }, void>;
  /** Webhooks given a new record in the group being applied, with their `keep`. */
  readonly #toPrune = new Map<string, number>();

  constructor(db: Database.Database) {
    this.#exists = db.prepare('SELECT id FROM webhook_deliveries WHERE id = ?');
    this.#upsert = db.prepare(
      `INSERT INTO webhook_deliveries (id, webhook_id, status, created_at, body)
       VALUES (@id, @webhook_id, @status, @created_at, @body)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, body = excluded.body`,
    );
    // Finished deliveries of a webhook are pruned through this index, never by walking its
    // pending ones: with a receiver down for long, those are many and every save prunes.
    // Created here, idempotently, like the job table's own indexes (an older server ignores it).
    db.exec(
      `CREATE INDEX IF NOT EXISTS webhook_deliveries_finished
         ON webhook_deliveries (webhook_id, created_at, id) WHERE status <> 'pending'`,
    );
    // The keep-th newest delivery (pending or not) is the boundary, found by walking `keep` rows
    // of the newest index; finished ones strictly older than it go (a range of the index above).
    this.#prune = db.prepare(
      `DELETE FROM webhook_deliveries
       WHERE webhook_id = @webhookId AND status <> 'pending'
         AND (created_at, id) < (
           SELECT created_at, id FROM webhook_deliveries WHERE webhook_id = @webhookId
           ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ${boundCount('keep')} - 1)`,
    );
    this.#get = db.prepare('SELECT * FROM webhook_deliveries WHERE id = ?');
    this.#list = db.prepare(
      `SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ${BOUND_COUNT}`,
    );
    const saveOne = ({ delivery, keep }: { delivery: DeliveryRecord; keep: number }) => {
      const isNew = this.#exists.get(delivery.id) === undefined;
      this.#upsert.run({
        id: delivery.id,
        webhook_id: delivery.webhookId,
        status: delivery.status,
        created_at: delivery.createdAt,
        body: JSON.stringify(delivery),
      });
      if (isNew)
        this.#toPrune.set(delivery.webhookId, Math.min(keep, this.#toPrune.get(delivery.webhookId) ?? keep));
    };
    this.#saves = new GroupCommit(
      db,
      saveOne,
      {
        afterCommit: () => {},
        beforeDeferred: () => {},
        beforeGroup: () => this.#toPrune.clear(),
        // Inside the group's transaction, after its saves: one prune per webhook.
        endOfGroup: () => {
          for (const [webhookId, keep] of this.#toPrune) this.#prune.run({ webhookId, keep });
          this.#toPrune.clear();
        },
      },
      { isolated: false },
    );
  }

  save(delivery: DeliveryRecord, keep: number): Promise<void> {
    return this.#saves.commit({ delivery, keep }, false);
  }

  async get(id: string): Promise<DeliveryRecord | null> {
    const row = this.#get.get(id);
    return row ? (JSON.parse(row.body) as DeliveryRecord) : null;
  }

  async list(webhookId: string, limit: number): Promise<DeliveryRecord[]> {
    return this.#list.all(webhookId, limit).map((row) => JSON.parse(row.body) as DeliveryRecord);
  }
}
