/**
 * What the `folio` command prints when it cannot start: a line that names the variable to fix
 * (FOLIO_DATA_DIR, MONGODB_URI, PORT, HOST, ...) and says why, never a raw stack trace. Errors
 * are recognised by class or by name (the MongoDB driver loads only when it is used, so its
 * classes are not imported here).
 */
import { ConfigError } from '../config/load.js';
import { DataDirError } from '../store/embedded/database/dataDir.js';
import { DataDirLockedError } from '../store/embedded/database/dataDirLock.js';
import { StoreStartError } from '../store/port.js';

/** How deep to follow `error.cause` (wrapping is a few levels; a cycle must not loop). */
const MAX_CAUSE_DEPTH = 8;

/** MongoDB's AuthenticationFailed and Unauthorized server error codes. */
const AUTHENTICATION_FAILED = 18;
const UNAUTHORIZED = 13;

const URI_ERRORS = new Set([
  'MongoParseError',
  'MongoInvalidArgumentError',
  'MongoMissingCredentialsError',
  'MongoMissingDependencyError',
]);
const NETWORK_ERRORS = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoTopologyClosedError',
]);

type ErrorWithCode = Error & { code?: unknown; syscall?: unknown; hostname?: unknown; port?: unknown };

/** The error and its causes, outermost first. */
function causeChain(error: unknown): Error[] {
  const chain: Error[] = [];
  let current: unknown = error;
  while (current instanceof Error && chain.length < MAX_CAUSE_DEPTH && !chain.includes(current)) {
    chain.push(current);
    current = current.cause;
  }
  return chain;
}

function mongoMessage(chain: Error[]): string | null {
  const mongo = chain.find((e) => e.name.startsWith('Mongo') || e.name === 'UnsupportedServerError');
  if (!mongo) return null;
  const { name, message } = mongo;
  const code = (mongo as ErrorWithCode).code;
  if (URI_ERRORS.has(name)) return `MONGODB_URI is not a usable MongoDB connection string: ${message}`;
  if (NETWORK_ERRORS.has(name)) {
    return `MONGODB_URI: cannot reach MongoDB (${message}); check that the server runs and that this machine can reach the hosts in the URI`;
  }
  if (code === AUTHENTICATION_FAILED) {
    return `MONGODB_URI: MongoDB refused the user name or password in the URI (${message})`;
  }
  if (code === UNAUTHORIZED) {
    return `MONGODB_URI: the MongoDB user in the URI lacks a permission Folio needs (${message})`;
  }
  return `MONGODB_URI: ${message}`;
}

function listenMessage(error: ErrorWithCode): string | null {
  const { code, syscall } = error;
  if (syscall === 'listen') {
    if (code === 'EADDRINUSE') {
      return `PORT: ${error.message}: the port is taken; set PORT to another one (PORT=0 picks a free port).`;
    }
    if (code === 'EACCES') {
      return `PORT: ${error.message}: this user may not listen on that port (below 1024 needs privileges); set PORT to 1024 or above.`;
    }
    if (code === 'EADDRNOTAVAIL') {
      return `HOST: ${error.message}: not an address of this machine; set HOST to one of its addresses, or 0.0.0.0 for all of them.`;
    }
  }
  if (syscall === 'getaddrinfo' && typeof error.hostname === 'string') {
    return `HOST: cannot resolve "${error.hostname}" (${String(code)}); set HOST to an address or a name this machine resolves.`;
  }
  return null;
}

/**
 * The text to print (without a trailing newline) for an error that stopped the command. Known
 * causes get one line naming the variable; anything else gets its message, and its stack only
 * when `FOLIO_LOG_LEVEL` asks for debug or trace output.
 */
export function startupErrorReport(error: unknown, env: NodeJS.ProcessEnv = {}): string {
  if (error instanceof ConfigError) return error.message;
  if (error instanceof DataDirLockedError) {
    return `FOLIO_DATA_DIR: ${error.message}. Stop that process first, or set FOLIO_DATA_DIR to another directory: the embedded store serves one process.`;
  }
  if (error instanceof DataDirError) {
    return `FOLIO_DATA_DIR: ${error.message}. Set FOLIO_DATA_DIR to a directory this user can create and write.`;
  }
  // The store already said what is wrong and how to fix it (a MongoDB host probed directly, a
  // missing privilege, a refused capability); its driver cause would only say less.
  if (error instanceof StoreStartError) return `MONGODB_URI: ${error.message}`;
  const chain = causeChain(error);
  const mongo = mongoMessage(chain);
  if (mongo) return mongo;
  const outer = chain[0];
  if (!outer) return `folio: ${String(error)}`;
  const listen = listenMessage(outer as ErrorWithCode);
  if (listen) return listen;
  const verbose = env.FOLIO_LOG_LEVEL === 'debug' || env.FOLIO_LOG_LEVEL === 'trace';
  if (verbose && outer.stack) return `folio: ${outer.stack}`;
  return `folio: ${outer.message} (FOLIO_LOG_LEVEL=debug prints the stack trace)`;
}
