/** The embedded store for the conformance suite: a fresh data directory per store. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  createEmbeddedStore,
  type EmbeddedStore,
  type EmbeddedStoreOptions,
} from '../../src/store/embedded/index.js';
import type { Store } from '../../src/store/port.js';
import type { StoreFactory } from './factories.js';

const dirs = new WeakMap<Store, string>();

/** A fresh, initialised embedded store in its own temp dir; `eventRetentionMs` defaults to 5 min. */
export async function createTempEmbeddedStore(
  eventRetentionMs = 300_000,
  options: Omit<EmbeddedStoreOptions, 'dataDir' | 'eventRetentionMs'> = {},
): Promise<EmbeddedStore> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'folio-store-'));
  const store = createEmbeddedStore({ ...options, dataDir, eventRetentionMs });
  try {
    await store.init();
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  dirs.set(store, dataDir);
  return store;
}

/** Close the store and remove its data directory. */
export async function destroyTempEmbeddedStore(store: Store): Promise<void> {
  await store.close();
  const dataDir = dirs.get(store);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}

export const embeddedFactory: StoreFactory = {
  name: 'embedded',
  create: () => createTempEmbeddedStore(),
  destroy: destroyTempEmbeddedStore,
};
