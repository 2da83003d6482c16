/** The service layer, wired once per process over one store. */
import { type Logger, pino } from 'pino';
import type { Config } from '../config/schema.js';
import type { Store } from '../store/port.js';
import { FOLIO_VERSION } from '../version.js';
import { AccountService } from './accounts.js';
import { ApiKeyService } from './apiKeys.js';
import { AutoIndexer } from './autoIndexes.js';
import { BulkService } from './bulk.js';
import { CollectionService } from './collections.js';
import { DocumentService } from './documents.js';
import { ExportService } from './exports/exporter.js';
import { ImportService } from './imports/importer.js';
import { IndexService } from './indexes.js';
import { KeyCache } from './keyCache.js';
import { ListingService } from './listing.js';
import { RateLimiter } from './rateLimit.js';
import { SchemaService } from './schemas/index.js';
import { SessionAccessService } from './sessionAccess.js';
import { StreamService } from './streams/index.js';
import { TrashService } from './trash/index.js';
import { TrashSweeper } from './trash/sweeper.js';
import { VersionService } from './versions.js';
import { DeliveryService } from './webhooks/deliveries.js';
import { WebhookService } from './webhooks/registrations.js';
import { SecretVault } from './webhooks/secretVault.js';
import { WebhookSender } from './webhooks/sender.js';
import { type HostLookup, systemLookup } from './webhooks/targets.js';

export interface Services {
  config: Config;
  store: Store;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  documents: DocumentService;
  versions: VersionService;
  listing: ListingService;
  indexes: IndexService;
  autoIndexes: AutoIndexer;
  rateLimiter: RateLimiter;
  sessionAccess: SessionAccessService;
  collections: CollectionService;
  webhooks: WebhookService;
  deliveries: DeliveryService;
  /** Its connections are closed when the server stops. */
  webhookSender: WebhookSender;
  imports: ImportService;
  exports: ExportService;
  bulk: BulkService;
  streams: StreamService;
  schemas: SchemaService;
  trash: TrashService;
  /** Started by the server; erases trash entries past their retention. */
  trashSweeper: TrashSweeper;
}

export function createServices(
  store: Store,
  config: Config,
  logger: Logger = pino({ level: 'silent' }),
  /** The clock of trash retention (tests move it). */
  nowMs: () => number = Date.now,
  /** How webhook host names resolve: the system resolver, except in tests (webhooks/targets.ts). */
  lookup: HostLookup = systemLookup,
): Services {
  const keyCache = new KeyCache(config.auth.keyCacheMs);
  const vault = new SecretVault(store, config.webhooks.secretKey);
  const webhookSender = new WebhookSender(
    config.webhooks.allowPrivateTargets,
    `Folio-Webhooks/${FOLIO_VERSION}`,
    lookup,
  );
  const deliveries = new DeliveryService(store, config, vault, webhookSender, logger);
  const schemas = new SchemaService(store, logger);
  const documents = new DocumentService(store, config, { schemas, nowMs });
  const autoIndexes = new AutoIndexer(store, config.autoIndexes);
  const streams = new StreamService(store, config);
  // What this process revokes closes its streams at once (others' within streams.keyCheckMs).
  keyCache.onRevoked((revocation) => streams.revoked(revocation));
  return {
    config,
    store,
    accounts: new AccountService(store, config, keyCache),
    apiKeys: new ApiKeyService(store, config, keyCache),
    documents,
    versions: new VersionService(store),
    listing: new ListingService(store, autoIndexes),
    indexes: new IndexService(store),
    autoIndexes,
    rateLimiter: new RateLimiter(store, config),
    sessionAccess: new SessionAccessService(config, new AccountService(store, config, keyCache)),
    collections: new CollectionService(store),
    webhooks: new WebhookService(store, config, vault, deliveries, lookup),
    deliveries,
    webhookSender,
    imports: new ImportService(store, config, schemas),
    exports: new ExportService(store),
    bulk: new BulkService(new DocumentService(store, config, { durable: false, schemas, nowMs }), store),
    streams,
    schemas,
    trash: new TrashService(store, config, schemas, nowMs),
    trashSweeper: new TrashSweeper(store, logger, nowMs),
  };
}
