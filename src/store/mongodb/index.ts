/**
 * The MongoDB store: any number of stateless Folio instances on one replica set or sharded
 * cluster (MongoDB 6.0+). Nothing talks to the server before `init()`, which connects (saying in
 * one line what is wrong when it cannot), refuses an unusable deployment with a message saying
 * why and how to fix it (topology, version, privileges, pre- and post-images), warns when the
 * deployment keeps less change history than promised, and creates the system indexes. Every
 * wait on the server is bounded (limits.ts). Layout and guarantees: docs/mongodb.md.
 */
import { type Db, MongoClient, type MongoClientOptions, type ServerHeartbeatSucceededEvent } from 'mongodb';
import { type JobBackend, type Store, StoreStartError } from '../port.js';
import { MongoAccounts } from './accounts/accounts.js';
import { MongoCounters } from './accounts/counters.js';
import { supportsSplitLargeEvent } from './changes/changeEvents.js';
import { MongoChangeFeed } from './changes/changes.js';
import { ClusterClock } from './changes/clusterClock.js';
import { MongoFeedConsumers } from './changes/consumers.js';
import { MongoStreamSlots } from './changes/streamSlots.js';
import { translatingFailures } from './database/failureTranslation.js';
import { DEFAULT_MONGO_LIMITS, type MongoLimits } from './database/limits.js';
import { unavailability } from './database/serverErrors.js';
import { MongoSchemas } from './documents/collectionSchemas.js';
import { MongoDocuments } from './documents/documents.js';
import { MongoTrash } from './documents/trash.js';
import { MongoIndexes } from './indexes/declaredIndexes.js';
import { MongoAgendaBackend } from './jobs/agendaBackend.js';
import { CollectionRegistry } from './layout/collections.js';
import { ensureSystemIndexes } from './layout/indexes.js';
import {
  AGENDA_JOBS_COLLECTION,
  assertDbPrefix,
  DEFAULT_DB_PREFIX,
  SYSTEM_COLLECTIONS,
  systemDbName,
} from './layout/naming.js';
import { MongoSnapshots } from './snapshots/snapshot.js';
import { diagnoseConnectFailure } from './startup/hostProbe.js';
import { proveImages } from './startup/imagesProbe.js';
import { checkHistoryRetention } from './startup/oplogWindow.js';
import { assertPrivileges } from './startup/privileges.js';
import { assertServerUsable, readPreferenceProblem, type Topology } from './startup/serverCheck.js';
import { MongoAttemptLocks } from './webhooks/attemptLocks.js';
import { MongoDeliveries } from './webhooks/deliveries.js';
import { MongoDeliveryBodies } from './webhooks/deliveryBodies.js';
import { MongoWebhooks } from './webhooks/webhooks.js';

export interface MongoStoreOptions {
  /** A replica set or sharded cluster; `?replicaSet=` for a replica set. */
  uri: string;
  /** Database names start with this (default `folio`): `<prefix>_system`, `<prefix>_<project>_<env>`. */
  dbPrefix?: string | undefined;
  /** Extra driver options (tests shorten timeouts). */
  clientOptions?: MongoClientOptions | undefined;
  /** Time limits (configuration `mongodb.*`); each defaults to DEFAULT_MONGO_LIMITS. */
  limits?: Partial<MongoLimits> | undefined;
  /** How long change events must stay resumable (`events.retentionMs`), checked at `init()`. */
  eventRetentionMs?: number | undefined;
  /** Where start-up and repair warnings go (default: process warnings on stderr). */
  onWarning?: ((message: string) => void) | undefined;
}

export interface MongoStore extends Store {
  readonly kind: 'mongodb';
  readonly dbPrefix: string;
  /** The driver client (connected by `init()`), for tooling and tests. */
  readonly client: MongoClient;
  readonly changes: MongoChangeFeed;
  /**
   * Which collections are known to be ready for writes. Whoever learns that a collection was
   * dropped (the change source, on an `invalidate` event or an event missing its image) calls
   * `collections.forget(db, name)`: the next write then checks and repairs it at once.
   */
  readonly collections: CollectionRegistry;
  /** Set by `init()`. */
  readonly topology: Topology | null;
}

export { DEFAULT_DB_PREFIX } from './layout/naming.js';

class MongoStoreImpl implements MongoStore {
  readonly kind = 'mongodb' as const;
  readonly client: MongoClient;
  readonly dbPrefix: string;
  readonly documents: MongoDocuments;
  readonly indexes: MongoIndexes;
  readonly changes: MongoChangeFeed;
  readonly accounts: MongoAccounts;
  readonly counters: MongoCounters;
  readonly webhooks: MongoWebhooks;
  readonly deliveries: MongoDeliveries;
  readonly deliveryBodies: MongoDeliveryBodies;
  readonly consumers: MongoFeedConsumers;
  readonly streamSlots: MongoStreamSlots;
  readonly snapshots: MongoSnapshots;
  readonly schemas: MongoSchemas;
  readonly trash: MongoTrash;
  readonly attemptLocks: MongoAttemptLocks;
  readonly collections: CollectionRegistry;
  topology: Topology | null = null;

  readonly #system: Db;
  readonly #uri: string;
  readonly #limits: MongoLimits;
  readonly #eventRetentionMs: number;
  readonly #warn: (message: string) => void;
  readonly #clock = new ClusterClock();
  #init: Promise<void> | null = null;
  #agenda: MongoAgendaBackend | null = null;
  #closed = false;

  constructor(options: MongoStoreOptions) {
    this.dbPrefix = options.dbPrefix ?? DEFAULT_DB_PREFIX;
    assertDbPrefix(this.dbPrefix);
    this.#uri = options.uri;
    this.#limits = { ...DEFAULT_MONGO_LIMITS, ...options.limits };
    this.#eventRetentionMs = options.eventRetentionMs ?? 300_000;
    this.#warn = options.onWarning ?? ((message) => process.emitWarning(message, 'FolioMongoDBWarning'));
    // The driver parses the URI here but connects only on connect() (init). Writes outside
    // transactions (accounts, keys, sessions, jobs) wait for a majority at most
    // writeConcernTimeoutMs; rate-limit counters ask for less (counters.ts).
    this.client = new MongoClient(options.uri, {
      appName: 'folio',
      writeConcern: { w: 'majority', wtimeoutMS: this.#limits.writeConcernTimeoutMs },
      // A full pool makes an operation wait at most this long, then 503 (serverErrors.ts).
      waitQueueTimeoutMS: this.#limits.poolWaitTimeoutMs,
      ...options.clientOptions,
    });
    // Heartbeat replies carry replica-set members' majority-commit time: keeps the clock fresh
    // for change feeds even in a process that writes nothing (see clusterClock.ts).
    this.client.on('serverHeartbeatSucceeded', (event: ServerHeartbeatSucceededEvent) =>
      this.#clock.observeHello(event.reply),
    );
    this.#system = this.client.db(systemDbName(this.dbPrefix));
    const collections = new CollectionRegistry(this.client, this.#limits.collectionRecheckMs, this.#warn);
    this.collections = collections;
    // Timeouts and a missing primary reach the services as the port's StoreUnavailableError.
    const translate = (error: unknown) => unavailability(error, this.#limits.queryTimeoutMs);
    this.documents = translatingFailures(
      new MongoDocuments(this.client, this.dbPrefix, collections, this.#clock, this.#limits),
      translate,
    );
    this.indexes = translatingFailures(
      new MongoIndexes(this.client, this.dbPrefix, collections, this.#system, this.#limits),
      translate,
    );
    this.changes = new MongoChangeFeed(
      this.client,
      this.dbPrefix,
      this.#clock,
      this.#warn,
      (db, collection) => collections.forget(db, collection),
      this.#limits,
    );
    this.accounts = translatingFailures(
      new MongoAccounts(this.client, this.#system, this.#limits),
      translate,
    );
    this.counters = translatingFailures(new MongoCounters(this.#system), translate);
    this.webhooks = translatingFailures(
      new MongoWebhooks(this.client, this.#system, this.#limits),
      translate,
    );
    this.deliveries = translatingFailures(new MongoDeliveries(this.#system), translate);
    this.deliveryBodies = translatingFailures(new MongoDeliveryBodies(this.#system), translate);
    this.consumers = translatingFailures(new MongoFeedConsumers(this.#system), translate);
    this.streamSlots = translatingFailures(new MongoStreamSlots(this.#system), translate);
    // Not translated: only the operator commands use it, and they report the driver's own error.
    this.snapshots = new MongoSnapshots(this.client, this.dbPrefix, collections, this.indexes, this.#warn);
    this.schemas = translatingFailures(new MongoSchemas(this.#system), translate);
    this.trash = translatingFailures(new MongoTrash(this.client, this.dbPrefix), translate);
    this.attemptLocks = translatingFailures(new MongoAttemptLocks(this.#system), translate);
  }

  init(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('MongoDB store: init() after close()'));
    this.#init ??= this.#connect().catch((error: unknown) => {
      // Let a later init() try again (the server may come up).
      this.#init = null;
      throw error;
    });
    return this.#init;
  }

  async #connect(): Promise<void> {
    const preference = readPreferenceProblem(this.client.options.readPreference?.mode);
    if (preference) throw new StoreStartError(preference);
    try {
      await this.client.connect();
    } catch (error) {
      // Asks each listed host directly what it is, so the message says what to fix.
      throw new StoreStartError(await diagnoseConnectFailure(this.client, this.#uri, error), {
        cause: error,
      });
    }
    const admin = this.client.db('admin');
    const { hello, topology, version } = await assertServerUsable(admin);
    this.#clock.observeHello(hello);
    this.changes.configure({ splitLargeEvents: supportsSplitLargeEvent(version) });
    await assertPrivileges(admin, this.#system.databaseName, this.#warn);
    await proveImages(this.#system, admin);
    await ensureSystemIndexes(this.#system, SYSTEM_COLLECTIONS);
    const retention = await checkHistoryRetention(this.client, admin, topology, this.#eventRetentionMs);
    if (retention) this.#warn(retention);
    this.topology = topology;
  }

  agendaBackend(): JobBackend {
    // Agenda's jobs live in the system database, on this store's own connection; one instance.
    this.#agenda ??= new MongoAgendaBackend(this.#system, AGENDA_JOBS_COLLECTION);
    return this.#agenda;
  }

  async ping(): Promise<void> {
    await this.#system.command({ ping: 1 });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.changes.close();
    await this.client.close();
  }
}

export function createMongoStore(options: MongoStoreOptions): MongoStore {
  return new MongoStoreImpl(options);
}
