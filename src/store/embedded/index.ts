/**
 * The embedded store: one SQLite file (`<dataDir>/folio.db`, WAL) serving one Folio process.
 * Nothing touches the disk before `init()`; the repositories exist from then on.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import type { JobBackend, Store } from '../port.js';
import { EmbeddedAccounts } from './accounts/accounts.js';
import { EmbeddedCounters } from './accounts/counters.js';
import { ChangeLog } from './changes/changeLog.js';
import { EmbeddedChangeFeed } from './changes/changes.js';
import { EmbeddedFeedConsumers } from './changes/consumers.js';
import { EmbeddedStreamSlots } from './changes/streamSlots.js';
import { BackgroundCheckpoints, type CheckpointStats } from './database/checkpoints.js';
import { asDataDirError, prepareDataDir } from './database/dataDir.js';
import { type DataDirLock, lockDataDir } from './database/dataDirLock.js';
import { keepTemporaryInMemory } from './database/tempStore.js';
import { EmbeddedSchemas } from './documents/collectionSchemas.js';
import { EmbeddedDocuments } from './documents/documents.js';
import { ErasureCheckpoint } from './documents/erasureCheckpoint.js';
import { EmbeddedTrash } from './documents/trash.js';
import { EmbeddedIndexes } from './indexes/declaredIndexes.js';
import { EmbeddedAgendaBackend } from './jobs/agendaBackend.js';
import { HistoryLayoutConversion } from './layout/historyLayout.js';
import { applySchema } from './layout/schema.js';
import { StoredFormConversion } from './layout/storedForms.js';
import { registerQueryFunctions } from './query/queryFunctions.js';
import { EmbeddedSnapshots } from './snapshots/snapshot.js';
import { EmbeddedAttemptLocks } from './webhooks/attemptLocks.js';
import { EmbeddedDeliveries } from './webhooks/deliveries.js';
import { EmbeddedDeliveryBodies } from './webhooks/deliveryBodies.js';
import { EmbeddedWebhooks } from './webhooks/webhooks.js';

export interface EmbeddedStoreOptions {
  /** Directory of the database file; created if missing. */
  dataDir: string;
  /** Change events younger than this stay resumable. */
  eventRetentionMs: number;
  /**
   * Hold the directory's one-process lock (dataDirLock.ts) while open; default true. Short-lived
   * operator commands that only add accounts and keys pass false to run beside a server.
   */
  lock?: boolean;
  /**
   * `full` (default): an acknowledged commit has reached the disk before it is acknowledged, so
   * it survives power loss (group commit keeps throughput). `normal`: it survives a crash of the
   * process but the last commits may be lost with the machine; faster on slow disks.
   */
  synchronous?: 'full' | 'normal';
  /**
   * Checkpoint the WAL in a worker thread (checkpoints.ts); default true. Short-lived operator
   * commands pass false and leave it to SQLite, inside their own commits.
   */
  backgroundCheckpoints?: boolean;
  /** Bytes of list pages and counts kept until their collection is written (query/answerCache.ts); 0 keeps none. */
  queryCacheBytes?: number;
  /** Bytes of documents' API text kept for reads by id (documents/textCache.ts); 0 keeps none. */
  documentCacheBytes?: number;
  /**
   * Bytes of database pages the connection keeps in memory (SQLite's `cache_size`); default
   * DEFAULT_PAGE_CACHE_BYTES. SQLite's own default, 2 MiB, holds a small fraction of a
   * collection of 100,000 documents: a list page then reads most of its rows from the file.
   */
  pageCacheBytes?: number;
  /** Rows per chunk of the periodic sweeps (chunkedSweep.ts); default SWEEP_CHUNK_ROWS. For tests. */
  sweepChunkRows?: number;
}

/** 64 MiB (`FOLIO_EMBEDDED_PAGE_CACHE_MB`). */
export const DEFAULT_PAGE_CACHE_BYTES = 64 * 1024 * 1024;

export const DATABASE_FILE = 'folio.db';

/** Milliseconds a writer waits for another connection's lock before failing. */
const BUSY_TIMEOUT_MS = 5000;

interface Parts {
  db: Database.Database;
  documents: EmbeddedDocuments;
  indexes: EmbeddedIndexes;
  changes: EmbeddedChangeFeed;
  accounts: EmbeddedAccounts;
  webhooks: EmbeddedWebhooks;
  deliveries: EmbeddedDeliveries;
  deliveryBodies: EmbeddedDeliveryBodies;
  consumers: EmbeddedFeedConsumers;
  snapshots: EmbeddedSnapshots;
  schemas: EmbeddedSchemas;
  trash: EmbeddedTrash;
  agenda: EmbeddedAgendaBackend | null;
  pruneTimer: NodeJS.Timeout;
  checkpoints: BackgroundCheckpoints | null;
  erasures: ErasureCheckpoint;
  conversion: StoredFormConversion;
  historyLayout: HistoryLayoutConversion;
  lock: DataDirLock | null;
}

/** The database file opened with the connection settings and the schema applied. */
function openDatabase(file: string, options: EmbeddedStoreOptions): Database.Database {
  const db = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma('foreign_keys = ON');
    // Freed pages are zeroed: an erased document (trash purge, purge on delete) leaves no
    // bytes behind in the file once the WAL is checkpointed (docs/collections.md).
    db.pragma('secure_delete = ON');
    // Negative: a size in KiB, not a number of pages.
    const cacheKib = Math.max(1, Math.floor((options.pageCacheBytes ?? DEFAULT_PAGE_CACHE_BYTES) / 1024));
    db.pragma(`cache_size = -${cacheKib}`);
    registerQueryFunctions(db);
    applySchema(db);
    // After the migrations, whose index builds sort whole tables in files.
    keepTemporaryInMemory(db);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

export class EmbeddedStore implements Store {
  readonly kind = 'embedded' as const;
  readonly counters = new EmbeddedCounters();
  readonly streamSlots = new EmbeddedStreamSlots();
  readonly attemptLocks = new EmbeddedAttemptLocks();
  #parts: Parts | null = null;
  #closed = false;

  constructor(private readonly options: EmbeddedStoreOptions) {}

  /** The database file this store opens. */
  get file(): string {
    return path.join(this.options.dataDir, DATABASE_FILE);
  }

  get documents(): EmbeddedDocuments {
    return this.#ready().documents;
  }

  get indexes(): EmbeddedIndexes {
    return this.#ready().indexes;
  }

  get changes(): EmbeddedChangeFeed {
    return this.#ready().changes;
  }

  get accounts(): EmbeddedAccounts {
    return this.#ready().accounts;
  }

  get webhooks(): EmbeddedWebhooks {
    return this.#ready().webhooks;
  }

  get deliveries(): EmbeddedDeliveries {
    return this.#ready().deliveries;
  }

  get deliveryBodies(): EmbeddedDeliveryBodies {
    return this.#ready().deliveryBodies;
  }

  get consumers(): EmbeddedFeedConsumers {
    return this.#ready().consumers;
  }

  get snapshots(): EmbeddedSnapshots {
    return this.#ready().snapshots;
  }

  get schemas(): EmbeddedSchemas {
    return this.#ready().schemas;
  }

  get trash(): EmbeddedTrash {
    return this.#ready().trash;
  }

  /** The open database, for the embedded Agenda backend and embedded-only tooling. */
  get db(): Database.Database {
    return this.#ready().db;
  }

  agendaBackend(): JobBackend {
    const parts = this.#ready();
    parts.agenda ??= new EmbeddedAgendaBackend(parts.db, { sweepChunkRows: this.options.sweepChunkRows });
    return parts.agenda;
  }

  async init(): Promise<void> {
    if (this.#parts) return;
    if (this.#closed) throw new Error('embedded store: init() after close()');
    prepareDataDir(this.options.dataDir);
    const lock = this.options.lock === false ? null : lockDataDir(this.options.dataDir);
    let db: Database.Database;
    try {
      db = openDatabase(this.file, this.options);
    } catch (error) {
      lock?.release();
      throw asDataDirError(this.options.dataDir, error);
    }
    const log = new ChangeLog(db, { pruneChunkRows: this.options.sweepChunkRows });
    const changes = new EmbeddedChangeFeed(log, this.options.eventRetentionMs);
    const pruneTimer = this.#startPruning(changes);
    const indexes = new EmbeddedIndexes(db);
    const checkpoints =
      this.options.backgroundCheckpoints === false
        ? null
        : BackgroundCheckpoints.start(db, {
            file: this.file,
            synchronous: this.options.synchronous === 'normal' ? 'NORMAL' : 'FULL',
            busyTimeoutMs: BUSY_TIMEOUT_MS,
          });
    // Erased bytes leave the WAL too, even if nothing is written after (erasureCheckpoint.ts).
    const erasures = new ErasureCheckpoint(() => {
      if (checkpoints) checkpoints.truncate();
      else if (db.open) db.pragma('wal_checkpoint(TRUNCATE)');
    });
    const trash = new EmbeddedTrash(db, log, () => erasures.schedule());
    const { conversion, historyLayout } = this.#startConversions(db);
    this.#parts = {
      db,
      changes,
      indexes,
      trash,
      schemas: new EmbeddedSchemas(db),
      documents: new EmbeddedDocuments(
        db,
        log,
        changes,
        indexes,
        trash,
        this.options.queryCacheBytes,
        this.options.documentCacheBytes,
      ),
      accounts: new EmbeddedAccounts(db, { sweepChunkRows: this.options.sweepChunkRows }),
      webhooks: new EmbeddedWebhooks(db, this.options.dataDir),
      deliveries: new EmbeddedDeliveries(db),
      deliveryBodies: new EmbeddedDeliveryBodies(db, { sweepChunkRows: this.options.sweepChunkRows }),
      consumers: new EmbeddedFeedConsumers(db),
      snapshots: new EmbeddedSnapshots(db, this.options.dataDir, indexes),
      agenda: null,
      pruneTimer,
      checkpoints,
      erasures,
      conversion,
      historyLayout,
      lock,
    };
  }

  /**
   * Prunes the change log now and every while, in chunks, off the caller's turn
   * (chunkedSweep.ts): a large backlog at start-up (a big import aged out while the server was
   * down) does not hold init() or the first requests.
   */
  #startPruning(changes: EmbeddedChangeFeed): NodeJS.Timeout {
    const prune = () => {
      if (changes.pruning) return;
      changes.prune().catch((error: unknown) => {
        // Only a closing store stops a chunk half-way; anything else is worth seeing.
        if (!this.#closed) process.emitWarning(`change-log prune failed: ${String(error)}`);
      });
    };
    prune();
    const pruneTimer = setInterval(prune, pruneIntervalMs(this.options.eventRetentionMs));
    pruneTimer.unref();
    return pruneTimer;
  }

  /**
   * Rewrites in the background the rows an older version wrote: documents in the old stored
   * form (storedForms.ts), and documents whose current version is in `versions` as well
   * (historyLayout.ts).
   */
  #startConversions(db: Database.Database) {
    const conversion = new StoredFormConversion(db, this.options.sweepChunkRows);
    conversion.run().catch((error: unknown) => {
      if (!this.#closed) process.emitWarning(`converting stored documents failed: ${String(error)}`);
    });
    const historyLayout = new HistoryLayoutConversion(db, this.options.sweepChunkRows);
    historyLayout.run().catch((error: unknown) => {
      if (!this.#closed) process.emitWarning(`moving documents' history failed: ${String(error)}`);
    });
    return { conversion, historyLayout };
  }

  /**
   * Convert the documents still in the form older versions stored (storedForms.ts); how many
   * were. Start-up does it in the background; this waits for that and goes over what is left.
   */
  convertStoredForms(): Promise<number> {
    return this.#ready().conversion.run();
  }

  /**
   * Move the documents still keeping their current version in `versions` too (historyLayout.ts);
   * how many were. Start-up does it in the background; this waits for that and goes over what
   * is left.
   */
  convertHistoryLayout(): Promise<number> {
    return this.#ready().historyLayout.run();
  }

  /** The background checkpointer's counts, or null when the connection checkpoints itself. */
  get checkpointStats(): CheckpointStats | null {
    return this.#ready().checkpoints?.stats ?? null;
  }

  async ping(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const parts = this.#parts;
    if (!parts) return;
    this.#parts = null;
    clearInterval(parts.pruneTimer);
    parts.changes.close('store_closed');
    // No sweep chunk may run on a closed connection: wait out the ones under way.
    await Promise.all([
      parts.changes.stopPruning(),
      parts.accounts.stopSweeps(),
      parts.deliveryBodies.stopSweeps(),
      parts.agenda?.repository.stopSweeps(),
      parts.conversion.stop(),
      parts.historyLayout.stop(),
    ]);
    // The worker's connection first: the last one to close checkpoints and removes the WAL.
    parts.erasures.stop();
    await parts.checkpoints?.stop();
    parts.db.close();
    parts.lock?.release();
  }

  #ready(): Parts {
    if (this.#parts) return this.#parts;
    throw new Error(this.#closed ? 'embedded store is closed' : 'embedded store: call init() first');
  }
}

/** Prune often enough that nothing outlives retention by more than half of it (at most 1 min). */
function pruneIntervalMs(retentionMs: number): number {
  return Math.min(60_000, Math.max(25, Math.floor(retentionMs / 2)));
}

export function createEmbeddedStore(options: EmbeddedStoreOptions): EmbeddedStore {
  return new EmbeddedStore(options);
}
