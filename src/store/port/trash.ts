/** Trash: deleted documents with their history, until their `expiresAt` (see DeleteWrite). */
import type { DataScope, FolioDocument, TrashStamp, VersionInfo } from './documents.js';

export interface TrashEntry extends TrashStamp {
  id: string;
  /** The document's last version, as it was when deleted. */
  document: FolioDocument;
}

/** A place in the trash's order (newest deletion first, then id descending). */
export interface TrashPosition {
  deletedAt: string;
  id: string;
}

export interface TrashRepository {
  /**
   * Entries of the collection not expired at `now` (ISO), newest deletion first (ties: id
   * descending), strictly after `after` when given, at most `limit`.
   */
  list(
    scope: DataScope,
    collection: string,
    options: { limit: number; now: string; after?: TrashPosition | undefined },
  ): Promise<TrashEntry[]>;
  /** The entry, or null when there is none or it expired at `now` (an expired entry is gone to readers at once). */
  get(scope: DataScope, collection: string, id: string, now: string): Promise<TrashEntry | null>;
  /** The trashed document's history, newest first; empty when not in the trash (or expired at `now`). */
  listVersions(scope: DataScope, collection: string, id: string, now: string): Promise<VersionInfo[]>;
  /** Erase the entry and its history now; false when there was none. */
  purge(scope: DataScope, collection: string, id: string): Promise<boolean>;
  /**
   * Erase entries of every scope expired at `now`, at most `limit` of them; how many. A store may
   * also drop expired entries on its own (MongoDB's TTL index), never before `expiresAt`.
   */
  purgeExpired(now: string, limit: number): Promise<number>;
}
