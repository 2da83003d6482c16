/**
 * Automatic-index usage shared by every Folio instance: one document per (scope, collection,
 * field) in the system database, `{_id, count, windowStart, lastUsed, expiresAt}`. Each instance
 * adds what it saw about once a second (services/autoIndexes.ts), so the build threshold is
 * reached by the queries of all instances together (not multiplied by their number), and an
 * index is dropped only when no instance used it. Windows and times use the server's clock.
 */
import type { AnyBulkWriteOperation, Collection, Db, Document } from 'mongodb';
import type { DataScope, IndexUsage, IndexUsageTotal } from '../../port.js';
import { SYSTEM_COLLECTIONS } from '../layout/naming.js';

export interface UsageDoc {
  _id: string;
  count: number;
  windowStart: Date;
  lastUsed: Date;
  expiresAt: Date;
}

/** A field's usage outlives its last query by this (then the TTL index removes it). */
export const USAGE_TTL_MS = 24 * 60 * 60_000;

/** Parts joined by NUL, which no id, environment, collection or field name holds. */
export function usageId(scope: DataScope, collection: string, field: string): string {
  return ['indexUsage', scope.projectId, scope.env, collection, field].join('\u0000');
}

/**
 * Add `queries` (> 0): a window that is missing or older than `windowMs` starts again at now
 * with this count; otherwise the count grows. In one `$set` every expression reads the
 * document as it was, so the window and the count decide on the same old `windowStart`.
 * `now` is `$$NOW` on the server; tests substitute a fixed date.
 */
export function usageUpdatePipeline(queries: number, windowMs: number, now: unknown = '$$NOW'): Document[] {
  const newWindow = {
    $or: [
      { $ne: [{ $type: '$windowStart' }, 'date'] },
      { $gt: [{ $subtract: [now, '$windowStart'] }, windowMs] },
    ],
  };
  return [
    {
      $set: {
        count: { $cond: [newWindow, queries, { $add: [{ $ifNull: ['$count', 0] }, queries] }] },
        windowStart: { $cond: [newWindow, now, '$windowStart'] },
        lastUsed: now,
        expiresAt: { $add: [now, USAGE_TTL_MS] },
      },
    },
  ];
}

/** A stored usage as the port's total: a window older than `windowMs` counts 0. */
export function usageTotal(
  entry: IndexUsage,
  doc: Pick<UsageDoc, 'count' | 'windowStart' | 'lastUsed'> | null,
  windowMs: number,
  nowMs: number,
): IndexUsageTotal {
  if (!doc) return { ...entry, queries: 0, lastUsedMs: 0 };
  const current = nowMs - doc.windowStart.getTime() <= windowMs;
  return { ...entry, queries: current ? doc.count : 0, lastUsedMs: doc.lastUsed.getTime() };
}

export class MongoIndexUsage {
  readonly #usage: Collection<UsageDoc>;

  constructor(system: Db) {
    this.#usage = system.collection<UsageDoc>(SYSTEM_COLLECTIONS.indexUsage);
  }

  async record(entries: readonly IndexUsage[], windowMs: number): Promise<IndexUsageTotal[]> {
    if (entries.length === 0) return [];
    const ids = entries.map((e) => usageId(e.scope, e.collection, e.field));
    const writes: AnyBulkWriteOperation<UsageDoc>[] = [];
    entries.forEach((entry, i) => {
      if (entry.queries <= 0) return;
      writes.push({
        updateOne: {
          filter: { _id: ids[i]! },
          update: usageUpdatePipeline(entry.queries, windowMs),
          upsert: true,
        },
      });
    });
    // Counts are hints for an optimisation: acknowledged by the primary alone.
    if (writes.length > 0) await this.#usage.bulkWrite(writes, { ordered: false, writeConcern: { w: 1 } });
    const docs = await this.#usage.find({ _id: { $in: ids } }).toArray();
    const byId = new Map(docs.map((d) => [d._id, d]));
    // The server's clock decided the windows; reading them back compares with ours (a hint).
    const nowMs = Date.now();
    return entries.map((entry, i) => usageTotal(entry, byId.get(ids[i]!) ?? null, windowMs, nowMs));
  }
}
