/** The store: every repository, and its lifecycle. */
import type { AccountRepository, CounterRepository, StreamSlotRepository } from './accounts.js';
import type { ChangeFeed } from './changes.js';
import type { DocumentRepository } from './documents.js';
import type { IndexRepository } from './indexes.js';
import type { JobBackend } from './jobs.js';
import type { SchemaRepository } from './schemas.js';
import type { SnapshotRepository } from './snapshots.js';
import type { TrashRepository } from './trash.js';
import type {
  AttemptLockRepository,
  DeliveryBodyRepository,
  DeliveryRepository,
  FeedConsumerRepository,
  WebhookRepository,
} from './webhooks.js';
export interface Store {
  readonly kind: 'embedded' | 'mongodb';
  readonly documents: DocumentRepository;
  /** Indexes declared by the collection's owner (`/{ns}/{collection}/_indexes`). */
  readonly indexes: IndexRepository;
  readonly changes: ChangeFeed;
  readonly accounts: AccountRepository;
  readonly counters: CounterRepository;
  readonly webhooks: WebhookRepository;
  readonly deliveries: DeliveryRepository;
  readonly consumers: FeedConsumerRepository;
  readonly attemptLocks: AttemptLockRepository;
  /** Webhook bodies of deliveries waiting for a retry: once per event, not per webhook. */
  readonly deliveryBodies: DeliveryBodyRepository;
  readonly streamSlots: StreamSlotRepository;
  /** The whole store at one point in time, and written back (backup, restore, migrate). */
  readonly snapshots: SnapshotRepository;
  /** Collection schemas (`/{ns}/{collection}/_schema`). */
  readonly schemas: SchemaRepository;
  /** Deleted documents kept for a while (`/{ns}/{collection}/_trash`). */
  readonly trash: TrashRepository;
  /**
   * Agenda's backend on this store's own connection, for background jobs. A job saved with
   * `unique({'data.dedupeKey': k}, {insertOnly: true})` exists at most once per name store-wide,
   * however many processes save it at the same moment.
   */
  agendaBackend(): JobBackend;
  /** Create schemas and indexes; verify the server is usable. Idempotent. */
  init(): Promise<void>;
  /** Resolves when the store answers a trivial request now; rejects otherwise (health checks). */
  ping(): Promise<void>;
  /** End subscriptions and release connections. */
  close(): Promise<void>;
}
