/**
 * Whether the deployment keeps change history as long as Folio promises (`events.retentionMs`):
 * a client resumes a change stream only while its token's change is in the oplog, and a delete
 * event needs its pre-image, which expires with the oplog or after the cluster's
 * `changeStreamOptions.preAndPostImages.expireAfterSeconds`. Read at start-up; a shortfall is a
 * warning (the operator may be resizing the oplog), never a refusal.
 */
import type { Db, Document, MongoClient } from 'mongodb';
import { asTimestamp } from '../changes/clusterClock.js';

export interface OplogFacts {
  /** Seconds (cluster time) of the oldest and newest oplog entries. */
  firstSeconds: number;
  lastSeconds: number;
  /** Bytes the oplog holds now, and at most (it is a capped collection). */
  sizeBytes: number;
  maxSizeBytes: number;
  /** The cluster's pre- and post-image expiry, in seconds; null when off (they follow the oplog). */
  imagesExpireAfterSeconds: number | null;
}

/** Below this share of its maximum size the oplog has never wrapped: its window is still growing. */
export const OPLOG_FULL_RATIO = 0.9;

/** The warning to print, or null when the history kept covers `retentionMs`. */
export function oplogWarning(facts: OplogFacts, retentionMs: number): string | null {
  const problems: string[] = [];
  const windowMs = Math.max(0, facts.lastSeconds - facts.firstSeconds) * 1000;
  const full = facts.maxSizeBytes > 0 && facts.sizeBytes >= facts.maxSizeBytes * OPLOG_FULL_RATIO;
  if (full && windowMs < retentionMs) {
    problems.push(
      `the oplog holds ${Math.floor(windowMs / 1000)} s of writes, less than events.retentionMs ` +
        `(${Math.floor(retentionMs / 1000)} s): enlarge it (replSetResizeOplog) or set storage.oplogMinRetentionHours`,
    );
  }
  const expire = facts.imagesExpireAfterSeconds;
  if (expire !== null && expire * 1000 < retentionMs) {
    problems.push(
      `pre- and post-images expire after ${expire} s (changeStreamOptions.preAndPostImages.expireAfterSeconds), ` +
        `less than events.retentionMs (${Math.floor(retentionMs / 1000)} s): raise it or set it to "off"`,
    );
  }
  if (problems.length === 0) return null;
  return `MongoDB keeps less change history than Folio promises; resuming an older event will fail (history_lost): ${problems.join('; ')}.`;
}

/** `expireAfterSeconds` from a `getClusterParameter: 'changeStreamOptions'` reply; null for "off" or absent. */
export function imagesExpiry(reply: Document): number | null {
  const params: unknown = reply.clusterParameters;
  if (!Array.isArray(params)) return null;
  const options = params.find((p: Document) => p?._id === 'changeStreamOptions') as Document | undefined;
  const expire: unknown = options?.preAndPostImages?.expireAfterSeconds;
  if (typeof expire === 'number') return expire;
  // BSON longs arrive as bigint or Long depending on options; both convert.
  if (typeof expire === 'bigint') return Number(expire);
  if (typeof expire === 'object' && expire !== null && 'toNumber' in expire) {
    return (expire as { toNumber(): number }).toNumber();
  }
  return null;
}

/** Read the facts from a replica set; throws when the user may not read them. */
export async function readOplogFacts(client: MongoClient, admin: Db): Promise<OplogFacts> {
  const oplog = client.db('local').collection('oplog.rs');
  const edge = async (direction: 1 | -1) => {
    const [entry] = await oplog
      .find({}, { sort: { $natural: direction }, limit: 1, projection: { ts: 1 } })
      .toArray();
    const ts = asTimestamp(entry?.ts);
    if (!ts) throw new Error('the oplog is empty or unreadable');
    return ts.t;
  };
  const [stats] = await oplog.aggregate([{ $collStats: { storageStats: {} } }]).toArray();
  const storage = (stats?.storageStats ?? {}) as { size?: unknown; maxSize?: unknown };
  const expiry = await admin
    .command({ getClusterParameter: 'changeStreamOptions' })
    .then(imagesExpiry, () => null);
  return {
    firstSeconds: await edge(1),
    lastSeconds: await edge(-1),
    sizeBytes: Number(storage.size ?? 0),
    maxSizeBytes: Number(storage.maxSize ?? 0),
    imagesExpireAfterSeconds: expiry,
  };
}

/** The warning for this deployment, if any (sharded clusters: each shard has its own oplog). */
export async function checkHistoryRetention(
  client: MongoClient,
  admin: Db,
  topology: 'replicaSet' | 'sharded',
  retentionMs: number,
): Promise<string | null> {
  if (topology === 'sharded') {
    return (
      `Folio cannot read shards' oplogs through mongos: make sure each shard's oplog covers ` +
      `events.retentionMs (${Math.floor(retentionMs / 1000)} s).`
    );
  }
  try {
    return oplogWarning(await readOplogFacts(client, admin), retentionMs);
  } catch (error) {
    return (
      `Could not read the oplog window (${error instanceof Error ? error.message : String(error)}): make ` +
      `sure the oplog covers events.retentionMs (${Math.floor(retentionMs / 1000)} s).`
    );
  }
}
