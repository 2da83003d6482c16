/** Choose and open the store the configuration asks for. */
import { createEmbeddedStore, type EmbeddedStoreOptions } from './embedded/index.js';
import type { MongoLimits } from './mongodb/database/limits.js';
import type { Store } from './port.js';

export interface OpenedStore {
  store: Store;
  /** Where the data lives, for the start-up banner (no credentials). */
  description: string;
  /** Extra shutdown work (the in-memory MongoDB). */
  stop(): Promise<void>;
}

/** What choosing and opening a store reads: the configuration's store keys (config/schema.ts). */
export interface StoreSettings {
  /** `auto`: MongoDB when `mongodbUri` is set, else embedded. */
  store: 'auto' | 'embedded' | 'mongodb' | 'mongodb-memory';
  mongodbUri: string;
  dataDir: string;
  events: { retentionMs: number };
  embedded: {
    synchronous: NonNullable<EmbeddedStoreOptions['synchronous']>;
    queryCacheMb: number;
    documentCacheMb: number;
    pageCacheMb: number;
  };
  mongodb: MongoLimits & { dbPrefix: string };
}

export interface OpenStoreOptions {
  /**
   * Embedded store only: hold the data directory's one-process lock (default true). The operator
   * commands pass false: they only add accounts and keys, which SQLite lets them do beside a server.
   */
  lockDataDir?: boolean;
  /** Receives start-up and repair warnings (the server logs them). */
  warn?: (message: string) => void;
}

export async function openStore(config: StoreSettings, options: OpenStoreOptions = {}): Promise<OpenedStore> {
  const kind = config.store === 'auto' ? (config.mongodbUri ? 'mongodb' : 'embedded') : config.store;
  if (kind === 'embedded') {
    const store = createEmbeddedStore({
      dataDir: config.dataDir,
      eventRetentionMs: config.events.retentionMs,
      lock: options.lockDataDir ?? true,
      synchronous: config.embedded.synchronous,
      queryCacheBytes: config.embedded.queryCacheMb * 1024 * 1024,
      documentCacheBytes: config.embedded.documentCacheMb * 1024 * 1024,
      pageCacheBytes: config.embedded.pageCacheMb * 1024 * 1024,
      // A short-lived operator command (no lock) leaves checkpoints to SQLite.
      backgroundCheckpoints: options.lockDataDir ?? true,
    });
    await store.init();
    return { store, description: `embedded store in ${config.dataDir}`, stop: () => store.close() };
  }
  // The MongoDB driver loads only when it is used, keeping the embedded start fast.
  const { createMongoStore } = await import('./mongodb/index.js');
  const { dbPrefix, ...limits } = config.mongodb;
  const mongoOptions = {
    dbPrefix,
    limits,
    eventRetentionMs: config.events.retentionMs,
    onWarning: options.warn,
  };
  if (kind === 'mongodb-memory') {
    const { startMemoryReplicaSet } = await import('./mongodb/database/memoryServer.js');
    const memory = await startMemoryReplicaSet();
    const store = createMongoStore({ uri: memory.uri, ...mongoOptions });
    await store.init();
    return {
      store,
      description: 'in-memory MongoDB replica set (data is lost on exit)',
      stop: async () => {
        await store.close();
        await memory.stop();
      },
    };
  }
  if (!config.mongodbUri) throw new Error('FOLIO_STORE=mongodb needs MONGODB_URI.');
  const store = createMongoStore({ uri: config.mongodbUri, ...mongoOptions });
  await store.init();
  return { store, description: `MongoDB (${redactUri(config.mongodbUri)})`, stop: () => store.close() };
}

/** Never print credentials from a connection string. */
export function redactUri(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//***@');
}
