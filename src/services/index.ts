/** The service layer, wired once per process over one store. */
import type { Config } from '../config/schema.js';
import type { Store } from '../store/port.js';
import { AccountService } from './accounts.js';
import { ApiKeyService } from './apiKeys.js';
import { BulkService } from './bulk.js';
import { DocumentService } from './documents.js';
import { ExportService } from './exports/exporter.js';
import { ImportService } from './imports/importer.js';
import { ListingService } from './listing.js';
import { RateLimiter } from './rateLimit.js';
import { VersionService } from './versions.js';

export interface Services {
  config: Config;
  store: Store;
  accounts: AccountService;
  apiKeys: ApiKeyService;
  documents: DocumentService;
  versions: VersionService;
  listing: ListingService;
  rateLimiter: RateLimiter;
  imports: ImportService;
  exports: ExportService;
  bulk: BulkService;
}

export function createServices(store: Store, config: Config): Services {
  const documents = new DocumentService(store, config);
  return {
    config,
    store,
    accounts: new AccountService(store, config),
    apiKeys: new ApiKeyService(store, config),
    documents,
    versions: new VersionService(store),
    listing: new ListingService(store),
    rateLimiter: new RateLimiter(store, config),
    imports: new ImportService(store, config),
    exports: new ExportService(store),
    bulk: new BulkService(documents),
  };
}
