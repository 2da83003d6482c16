/**
 * What a commit sends, as pure functions over the batch: the ordered bulk operations for the
 * document collection and its version sidecar. The conditions are `../writeConditions.ts`,
 * shared with the embedded store.
 */
import type { AnyBulkWriteOperation, BulkWriteResult } from 'mongodb';
import type { DocumentWrite, WriteOperation } from '../../port.js';
import { type StoredDocument, toStored } from '../../storedForm.js';
import { writeId } from '../../writeConditions.js';
import { erasingUpdate } from './erasure.js';

/** One element of a document's history in the sidecar collection. */
export interface VersionRecord {
  docId: string;
  version: number;
  operation: WriteOperation;
  /** The version's `$updatedAt`: when the write that made it happened. */
  timestamp: string;
  apiKeyHint: string;
  /** The whole document at that version, in stored form. */
  document: StoredDocument;
}

/** The distinct ids a batch touches, in first-seen order. */
export function batchIds(writes: readonly DocumentWrite[]): string[] {
  return [...new Set(writes.map(writeId))];
}

export interface WritePlan {
  documentOps: AnyBulkWriteOperation<StoredDocument>[];
  versionOps: AnyBulkWriteOperation<VersionRecord>[];
  /** What the document bulk write must report if no one else changed these documents. */
  expected: { inserted: number; matched: number; deleted: number };
}

/**
 * The ordered operations for a batch whose conditions hold. Every document write is still
 * conditioned on the version it expects, so a change slipping in between the check and the
 * write shows up as a count mismatch (or a write conflict) instead of a lost update.
 */
export function planWrites(writes: readonly DocumentWrite[]): WritePlan {
  const documentOps: AnyBulkWriteOperation<StoredDocument>[] = [];
  const versionOps: AnyBulkWriteOperation<VersionRecord>[] = [];
  const expected = { inserted: 0, matched: 0, deleted: 0 };
  for (const write of writes) {
    if (write.kind === 'delete') {
      if (write.erase) {
        // Its delete event then carries the id and metadata only (erasure.ts).
        documentOps.push(erasingUpdate(write.id, write.expectedVersion));
        expected.matched++;
      }
      documentOps.push({ deleteOne: { filter: { _id: write.id, '_folio.version': write.expectedVersion } } });
      versionOps.push({ deleteMany: { filter: { docId: write.id } } });
      expected.deleted++;
      continue;
    }
    const stored = toStored(write.document);
    if (write.expectedVersion === 0) {
      documentOps.push({ insertOne: { document: stored } });
      expected.inserted++;
      // A new document has no history. Records left over from a document collection dropped
      // behind Folio's back (its sidecar survives) would otherwise collide with version 1. One
      // back from the trash has its history back already (trash.ts).
      if (!write.fromTrash) versionOps.push({ deleteMany: { filter: { docId: stored._id } } });
    } else {
      documentOps.push({
        replaceOne: {
          filter: { _id: stored._id, '_folio.version': write.expectedVersion },
          replacement: stored,
        },
      });
      expected.matched++;
    }
    const version = write.document.$version;
    versionOps.push({
      insertOne: {
        document: {
          docId: stored._id,
          version,
          operation: write.operation,
          timestamp: write.document.$updatedAt,
          apiKeyHint: write.apiKeyHint,
          document: stored,
        },
      },
    });
    // Versions are contiguous, so "all but the newest keepVersions" is a version bound.
    const cutoff = version - write.keepVersions;
    if (cutoff >= 1)
      versionOps.push({ deleteMany: { filter: { docId: stored._id, version: { $lte: cutoff } } } });
  }
  return { documentOps, versionOps, expected };
}

export function matchesExpected(result: BulkWriteResult, expected: WritePlan['expected']): boolean {
  return (
    result.insertedCount === expected.inserted &&
    result.matchedCount === expected.matched &&
    result.deletedCount === expected.deleted
  );
}
