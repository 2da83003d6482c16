/**
 * Snapshots: every record of a store at one point in time, and written back into an empty one
 * (`folio backup`, `folio restore`, `folio migrate`; the file format is in docs/operations.md).
 */
import type { AccountRecord, ApiKeyRecord, ProjectRecord } from './accounts.js';
import type { DataScope, FolioDocument, VersionInfo } from './documents.js';
import type { IndexRecord } from './indexes.js';
import type { CollectionSchemaRecord } from './schemas.js';
import type { TrashEntry } from './trash.js';
import type { WebhookRecord } from './webhooks.js';

/** Store-wide settings a snapshot carries: the key that seals webhook secrets, when the store made one. */
export type SnapshotSettingName = 'webhookSealingKey';

/**
 * One record of a snapshot, in the port's own shapes (no store layout), so a snapshot of either
 * store writes back into either. Left out, being tied to a running deployment rather than to
 * its data: sessions (users sign in again), webhook deliveries, change events and feed
 * positions, rate-limit counters, stream slots and background jobs.
 */
export type SnapshotRecord =
  | { type: 'setting'; name: SnapshotSettingName; value: string }
  | { type: 'account'; account: AccountRecord }
  | { type: 'project'; project: ProjectRecord }
  | { type: 'key'; key: ApiKeyRecord }
  | { type: 'webhook'; webhook: WebhookRecord }
  | { type: 'document'; scope: DataScope; collection: string; document: FolioDocument }
  | {
      type: 'version';
      scope: DataScope;
      collection: string;
      id: string;
      version: VersionInfo;
      /** The whole document at that version. */
      document: FolioDocument;
    }
  | { type: 'index'; scope: DataScope; collection: string; index: IndexRecord }
  | { type: 'schema'; scope: DataScope; collection: string; schema: CollectionSchemaRecord }
  /** A trash entry not expired at the read's start (expired ones are erased data: left out). */
  | { type: 'trashedDocument'; scope: DataScope; collection: string; entry: TrashEntry }
  /** One version of a trashed document's history; it comes after its `trashedDocument`. */
  | {
      type: 'trashedVersion';
      scope: DataScope;
      collection: string;
      id: string;
      version: VersionInfo;
      document: FolioDocument;
    };

export type SnapshotRecordType = SnapshotRecord['type'];

/**
 * A snapshot read could not stay at its point in time (MongoDB: a collection or index was
 * created under it, or the point left the server's history). `retryable`: a new read may succeed.
 * The message says what happened and what to do, in one line.
 */
export class SnapshotLostError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SnapshotLostError';
  }
}

export interface SnapshotRepository {
  /**
   * Every record of the store as it was at one point in time, while writers go on (embedded: one
   * read transaction on a connection of its own, which never blocks writers; MongoDB: a snapshot
   * session, see docs/operations.md). Order: settings, accounts, projects, keys, webhooks, schemas,
   * then per scope documents, versions, trashed documents each before its versions, and index
   * definitions. Leaving the loop early releases the snapshot.
   */
  read(): AsyncIterable<SnapshotRecord>;
  /** True when the store holds no account, project, key, webhook, document, version, index, schema or trash entry. */
  isEmpty(): Promise<boolean>;
  /**
   * Write the records exactly as given: no change events, no plan limits, no version numbering.
   * Each replaces the record of the same identity, so writing a batch twice (a resumed restore)
   * leaves what writing it once does. Index records are built over the documents already
   * written, so they come after them.
   */
  write(records: readonly SnapshotRecord[]): Promise<void>;
}
