/** The service layer, wired once per process over one store. */
import type { Config } from '../config/schema.js';
import type { Store } from '../store/port.js';
import { AccountService } from './accounts.js';
import { ApiKeyService } from './apiKeys.js';
import { CollectionService } from './collections.js';
import { DocumentService } from './documents.js';
import { ListingService } from './listing.js';
import { RateLimiter } from './rateLimit.js';
import { SessionAccessService } from './sessionAccess.js';
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
  sessionAccess: SessionAccessService;
  collections: CollectionService;
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
    sessionAccess: new SessionAccessService(config, new AccountService(store, config)),
    collections: new CollectionService(store),
  };
}
