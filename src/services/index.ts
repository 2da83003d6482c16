/** The service layer, wired once per process over one store. */
import type { Config } from '../config/schema.js';
import type { Store } from '../store/port.js';
import { AccountService } from './accounts.js';
import { ApiKeyService } from './apiKeys.js';
import { DocumentService } from './documents.js';
import { ListingService } from './listing.js';
import { RateLimiter } from './rateLimit.js';
import { StreamService } from './streams/index.js';
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
  streams: StreamService;
}

export function createServices(store: Store, config: Config): Services {
  return {
    config,
    store,
    accounts: new AccountService(store, config),
    apiKeys: new ApiKeyService(store, config),
    documents: new DocumentService(store, config),
    versions: new VersionService(store),
    listing: new ListingService(store),
    rateLimiter: new RateLimiter(store, config),
    streams: new StreamService(store, config),
  };
}
