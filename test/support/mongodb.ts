/**
 * MongoDB for the test suites: `MONGODB_URI` when set, else an in-memory replica set from
 * mongodb-memory-server when it can get a `mongod` binary. Without either, the MongoDB suites
 * are left out and exactly one `SKIPPED: no MongoDB (<reason>)` line says so (never a silent
 * pass); with `FOLIO_REQUIRE_MONGODB=1` (`npm run test:mongodb`) that is an error instead.
 *
 * Every store or server gets its own database prefix, unique to this run, so runs and suites
 * never see each other's data; a root `after` hook drops this run's databases at the end.
 */
import { randomBytes } from 'node:crypto';
import { MongoClient } from 'mongodb';
import type { ConfigOverrides } from '../../src/config/load.js';
import {
  type LoneMongod,
  startLoneMongod,
  startMemoryReplicaSet,
} from '../../src/store/mongodb/database/memoryServer.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import type { Store } from '../../src/store/port.js';
import type { StoreFactory } from '../store/factories.js';
import { withTimeout } from './timeout.js';

/** How long mongodb-memory-server may take to start (a first run downloads `mongod`). */
const MEMORY_SERVER_START_MS = 120_000;
/** Fail fast in tests when the server is unreachable, instead of the driver's 30 s. */
const SERVER_SELECTION_TIMEOUT_MS = 15_000;

export interface MongoTestTarget {
  uri: string;
  /** Where it came from, for suite titles. */
  source: 'MONGODB_URI' | 'mongodb-memory-server';
}

/** `t` + base-36 time + random: this run's stem; prefixes are `<stem>_<n>` (≤ 20 characters). */
const RUN_STEM = `t${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
let prefixCounter = 0;

/** A database prefix no other store, server or run uses. */
export function uniqueDbPrefix(): string {
  prefixCounter += 1;
  return `${RUN_STEM}_${prefixCounter.toString(36)}`;
}

let probe: Promise<MongoTestTarget | null> | null = null;

/** Drop every database whose name starts with `<stem>_` (a prefix or this run's stem). */
export async function dropDatabases(uri: string, stem: string): Promise<void> {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: SERVER_SELECTION_TIMEOUT_MS });
  try {
    const { databases } = await client
      .db('admin')
      .admin()
      .listDatabases({ nameOnly: true, filter: { name: { $regex: `^${stem}_` } } });
    for (const { name } of databases) await client.db(name).dropDatabase();
  } finally {
    await client.close();
  }
}

/** Runs `fn` once after all tests, when loaded under mocha (a root-level hook). */
function afterAllTests(fn: () => Promise<void>): void {
  if (typeof after !== 'function') return;
  after(async function () {
    // Dropping many databases, or stopping mongod, can outlast the default test timeout.
    this.timeout(120_000);
    await fn();
  });
}

async function findMongo(): Promise<MongoTestTarget | null> {
  const uri = process.env.MONGODB_URI;
  if (uri) {
    afterAllTests(() => dropDatabases(uri, RUN_STEM));
    return { uri, source: 'MONGODB_URI' };
  }
  // Test commands on: the live suites use fail points to provoke timeouts.
  const starting = startMemoryReplicaSet({ testCommands: true });
  try {
    const memory = await withTimeout(starting, MEMORY_SERVER_START_MS, 'mongodb-memory-server');
    afterAllTests(() => memory.stop());
    return { uri: memory.uri, source: 'mongodb-memory-server' };
  } catch (error) {
    // If it does come up after the timeout, do not leave it running.
    starting.then((late) => late.stop()).catch(() => {});
    const reason = `MONGODB_URI is not set and ${(error as Error).message}`;
    if (process.env.FOLIO_REQUIRE_MONGODB === '1') {
      // A failing test fails the run with this message; throwing here instead would make mocha
      // report an unrelated loader error for the spec file that imported us.
      const message = `FOLIO_REQUIRE_MONGODB=1 but there is no MongoDB: ${reason}`;
      if (typeof describe === 'function') {
        describe('MongoDB availability @mongodb', () => {
          it('a MongoDB is required by FOLIO_REQUIRE_MONGODB=1', () => {
            throw new Error(message);
          });
        });
        return null;
      }
      throw new Error(message);
    }
    console.log(`SKIPPED: no MongoDB (${reason})`);
    return null;
  }
}

/** The MongoDB to test against, or null (after printing the one SKIPPED line). Memoized. */
export function mongoTestTarget(): Promise<MongoTestTarget | null> {
  probe ??= findMongo();
  return probe;
}

/** A URI and a fresh prefix for one more server or store, or null when MongoDB is skipped. */
export async function mongoConnection(): Promise<{ uri: string; dbPrefix: string } | null> {
  const target = await mongoTestTarget();
  return target ? { uri: target.uri, dbPrefix: uniqueDbPrefix() } : null;
}

const prefixes = new WeakMap<Store, string>();

/** The conformance suite's MongoDB store factory (none when MongoDB is skipped). */
export async function mongoStoreFactories(): Promise<StoreFactory[]> {
  const target = await mongoTestTarget();
  if (!target) return [];
  return [
    {
      name: `mongodb @mongodb (${target.source})`,
      create: async () => {
        const dbPrefix = uniqueDbPrefix();
        const store = createMongoStore({
          uri: target.uri,
          dbPrefix,
          clientOptions: { serverSelectionTimeoutMS: SERVER_SELECTION_TIMEOUT_MS },
        });
        try {
          await store.init();
        } catch (error) {
          await store.close();
          throw error;
        }
        prefixes.set(store, dbPrefix);
        return store;
      },
      destroy: async (store) => {
        await store.close();
        const dbPrefix = prefixes.get(store);
        if (dbPrefix) await dropDatabases(target.uri, dbPrefix);
      },
    },
  ];
}

export interface MongoServerTarget {
  /** Tagged `@mongodb`, so `npm run test:mongodb` selects these suites. */
  name: string;
  /** Configuration for one test server on MongoDB, with its own database prefix. */
  overrides(): Promise<ConfigOverrides>;
}

/** For the HTTP suites (test/support/stores.ts): run them on MongoDB too, when there is one. */
export async function mongoServerOverrides(): Promise<MongoServerTarget[]> {
  const target = await mongoTestTarget();
  if (!target) return [];
  return [
    {
      name: 'mongodb @mongodb',
      overrides: async () => ({
        store: 'mongodb',
        mongodbUri: target.uri,
        mongodb: { dbPrefix: uniqueDbPrefix() },
      }),
    },
  ];
}

/**
 * A standalone or uninitiated `mongod` from mongodb-memory-server, or null (with the reason) when
 * it cannot start one here; the caller skips its test then. Stopped by the caller.
 */
export async function loneMongod(kind: 'standalone' | 'uninitiated'): Promise<LoneMongod | { skip: string }> {
  const starting = startLoneMongod(kind);
  try {
    return await withTimeout(starting, MEMORY_SERVER_START_MS, `a ${kind} mongod`);
  } catch (error) {
    starting.then((late) => late.stop()).catch(() => {});
    return { skip: (error as Error).message };
  }
}
