/**
 * A throw-away single-node MongoDB replica set for local trials (`FOLIO_STORE=mongodb-memory`)
 * and for the MongoDB test suites, through mongodb-memory-server. It runs a real `mongod`, which
 * it downloads on first use (or takes from MONGOMS_SYSTEM_BINARY); the package is a development
 * dependency, loaded only when asked for.
 */
import { lookup } from 'node:dns/promises';

const importModule = () => import('mongodb-memory-server-core');
type MemoryServerModule = Awaited<ReturnType<typeof importModule>>;

export interface MemoryReplicaSet {
  /** Connection string, with `replicaSet=` set. */
  uri: string;
  stop(): Promise<void>;
}

export const MISSING_PACKAGE_MESSAGE =
  'FOLIO_STORE=mongodb-memory needs the mongodb-memory-server-core package, a development ' +
  'dependency of Folio: run `npm install mongodb-memory-server-core` (or set MONGODB_URI to a ' +
  'MongoDB replica set instead).';

export class MemoryServerUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MemoryServerUnavailableError';
  }
}

async function loadModule(): Promise<MemoryServerModule> {
  try {
    return await importModule();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new MemoryServerUnavailableError(MISSING_PACKAGE_MESSAGE, { cause: error });
    }
    throw error;
  }
}

/**
 * Why mongodb-memory-server cannot start here, or null if it should: no `mongod` binary is
 * available and the download host does not even resolve. Checked up front because the library
 * otherwise spends seconds retrying the download before failing.
 */
async function unavailableReason(mod: MemoryServerModule): Promise<string | null> {
  let binary: string | undefined;
  try {
    binary = await mod.DryMongoBinary.locateBinary(await mod.DryMongoBinary.generateOptions());
  } catch (error) {
    return `no usable mongod binary (${(error as Error).message})`;
  }
  if (binary) return null;
  const source =
    process.env.MONGOMS_DOWNLOAD_URL ?? process.env.MONGOMS_DOWNLOAD_MIRROR ?? 'https://fastdl.mongodb.org';
  let host: string;
  try {
    host = new URL(source).hostname;
  } catch {
    return null;
  }
  try {
    await lookup(host);
    return null;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return `no mongod binary cached and the download host ${host} is unreachable (${String(code ?? error)})`;
  }
}

/**
 * Start a replica set (one member unless `members` says otherwise) with the WiredTiger engine
 * (needed for pre- and post-images).
 * `testCommands` enables the server's test commands (fail points), for the MongoDB test suites.
 */
export async function startMemoryReplicaSet(
  options: { testCommands?: boolean; members?: number } = {},
): Promise<MemoryReplicaSet> {
  const mod = await loadModule();
  const reason = await unavailableReason(mod);
  if (reason) throw new MemoryServerUnavailableError(`mongodb-memory-server cannot start: ${reason}`);
  const replSet = await mod.MongoMemoryReplSet.create({
    replSet: { count: options.members ?? 1, storageEngine: 'wiredTiger' },
    ...(options.testCommands ? { instanceOpts: [{ args: ['--setParameter', 'enableTestCommands=1'] }] } : {}),
  });
  return {
    uri: replSet.getUri(),
    stop: async () => {
      await replSet.stop({ doCleanup: true });
    },
  };
}

export interface LoneMongod {
  /** Connection string of the one server, without `replicaSet=`. */
  uri: string;
  stop(): Promise<void>;
}

/**
 * One `mongod` that is not a usable replica set: a standalone server, or a server started with
 * `--replSet` whose set was never initiated. For the start-up diagnosis tests.
 */
export async function startLoneMongod(kind: 'standalone' | 'uninitiated'): Promise<LoneMongod> {
  const mod = await loadModule();
  const reason = await unavailableReason(mod);
  if (reason) throw new MemoryServerUnavailableError(`mongodb-memory-server cannot start: ${reason}`);
  const server = await mod.MongoMemoryServer.create({
    instance: { storageEngine: 'wiredTiger', ...(kind === 'uninitiated' ? { replSet: 'rs0' } : {}) },
  });
  return {
    uri: server.getUri(),
    stop: async () => {
      await server.stop({ doCleanup: true });
    },
  };
}
