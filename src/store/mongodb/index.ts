/**
 * The MongoDB store: any number of stateless Folio instances on one replica set or sharded
 * cluster (MongoDB 6.0+). Nothing talks to the server before `init()`, which connects, refuses
 * an unusable deployment with a message saying why and how to fix it, and creates the system
 * indexes. Layout and guarantees: docs/mongodb.md.
 */
import type { AgendaBackend } from 'agenda';
import { type Db, MongoClient, type MongoClientOptions, type ServerHeartbeatSucceededEvent } from 'mongodb';
import type { Store } from '../port.js';
import { MongoAccounts } from './accounts.js';
import { MongoChangeFeed } from './changes.js';
import { ClusterClock } from './clusterClock.js';
import { CollectionRegistry } from './collections.js';
import { MongoFeedConsumers } from './consumers.js';
import { MongoCounters } from './counters.js';
import { MongoDeliveries } from './deliveries.js';
import { MongoDocuments } from './documents.js';
import { ensureSystemIndexes } from './indexes.js';
import { MongoAgendaBackend } from './jobs/agendaBackend.js';
import {
  AGENDA_JOBS_COLLECTION,
  assertDbPrefix,
  DEFAULT_DB_PREFIX,
  SYSTEM_COLLECTIONS,
  systemDbName,
} from './naming.js';
import { assertServerUsable, type Topology } from './serverCheck.js';
import { MongoStreamSlots } from './streamSlots.js';
import { MongoWebhooks } from './webhooks.js';

export interface MongoStoreOptions {
  /** A replica set or sharded cluster; `?replicaSet=` for a replica set. */
  uri: string;
  /** Database names start with this (default `folio`): `<prefix>_system`, `<prefix>_<project>_<env>`. */
  dbPrefix?: string | undefined;
  /** Extra driver options (tests shorten timeouts). */
  clientOptions?: MongoClientOptions | undefined;
}

export interface MongoStore extends Store {
  readonly kind: 'mongodb';
  readonly dbPrefix: string;
  /** The driver client (connected by `init()`), for tooling and tests. */
  readonly client: MongoClient;
  readonly changes: MongoChangeFeed;
  /** Set by `init()`. */
  readonly topology: Topology | null;
}

export { DEFAULT_DB_PREFIX } from './naming.js';

class MongoStoreImpl implements MongoStore {
  readonly kind = 'mongodb' as const;
  readonly client: MongoClient;
  readonly dbPrefix: string;
  readonly documents: MongoDocuments;
  readonly changes: MongoChangeFeed;
  readonly accounts: MongoAccounts;
  readonly counters: MongoCounters;
  readonly webhooks: MongoWebhooks;
  readonly deliveries: MongoDeliveries;
  readonly consumers: MongoFeedConsumers;
  readonly streamSlots: MongoStreamSlots;
  topology: Topology | null = null;

  readonly #system: Db;
  readonly #clock = new ClusterClock();
  #init: Promise<void> | null = null;
  #agenda: MongoAgendaBackend | null = null;
  #closed = false;

  constructor(options: MongoStoreOptions) {
    this.dbPrefix = options.dbPrefix ?? DEFAULT_DB_PREFIX;
    assertDbPrefix(this.dbPrefix);
    // The driver parses the URI here but connects only on connect() (init).
    this.client = new MongoClient(options.uri, { appName: 'folio', ...options.clientOptions });
    // Heartbeat replies carry replica-set members' majority-commit time: keeps the clock fresh
    // for change feeds even in a process that writes nothing (see clusterClock.ts).
    this.client.on('serverHeartbeatSucceeded', (event: ServerHeartbeatSucceededEvent) =>
      this.#clock.observeHello(event.reply),
    );
    this.#system = this.client.db(systemDbName(this.dbPrefix));
    const collections = new CollectionRegistry(this.client);
    this.documents = new MongoDocuments(this.client, this.dbPrefix, collections, this.#clock);
    this.changes = new MongoChangeFeed(this.client, this.dbPrefix, this.#clock);
    this.accounts = new MongoAccounts(this.client, this.#system);
    this.counters = new MongoCounters(this.#system);
    this.webhooks = new MongoWebhooks(this.client, this.#system);
    this.deliveries = new MongoDeliveries(this.#system);
    this.consumers = new MongoFeedConsumers(this.#system);
    this.streamSlots = new MongoStreamSlots(this.#system);
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
    try {
      await this.client.connect();
    } catch (error) {
      throw new Error(`Cannot connect to MongoDB (MONGODB_URI): ${(error as Error).message}`, {
        cause: error,
      });
    }
    const { hello, topology } = await assertServerUsable(this.client.db('admin'));
    this.#clock.observeHello(hello);
    await ensureSystemIndexes(this.#system, SYSTEM_COLLECTIONS);
    this.topology = topology;
  }

  agendaBackend(): AgendaBackend {
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
