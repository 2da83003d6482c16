/**
 * Partitioned dispatch: the change feed's events are split among `count` partitions by a hash
 * of their collection (project, environment, collection name), and each partition has its own
 * lease and saved position, so several instances share the dispatch work (each holds some of
 * the leases) and a collection's events stay in one partition, in feed order.
 *
 * Pure functions: which partition an event belongs to, the lease name of a partition, and how
 * long an instance waits before taking a free lease given how many it already holds (so that
 * leases spread over instances, while a lease nobody else takes is still taken).
 */
import { createHash } from 'node:crypto';
import type { DataScope } from '../../store/port.js';

export const DISPATCHER_NAME = 'webhook-dispatcher';

export interface Partition {
  index: number;
  count: number;
}

/** The one partition of a single-partition deployment (every event). */
export const WHOLE_FEED: Partition = { index: 0, count: 1 };

/** Every partition of `count`. */
export function partitions(count: number): Partition[] {
  if (!Number.isInteger(count) || count < 1)
    throw new Error('webhook partitions: count must be a positive integer');
  return Array.from({ length: count }, (_, index) => ({ index, count }));
}

/** The partition of a collection's events: a stable hash, the same on every instance. */
export function partitionOf(scope: DataScope, collection: string, count: number): number {
  if (count === 1) return 0;
  const digest = createHash('sha1')
    .update(scope.projectId)
    .update('\0')
    .update(scope.env)
    .update('\0')
    .update(collection)
    .digest();
  return digest.readUInt32BE(0) % count;
}

/**
 * The lease (and position) name of a partition. One partition keeps the name the single
 * dispatcher always had, so a deployment going from 1 to 1 partition keeps its position.
 */
export function leaseName(partition: Partition): string {
  return partition.count === 1
    ? DISPATCHER_NAME
    : `${DISPATCHER_NAME}/${partition.index}-of-${partition.count}`;
}

/**
 * How long to wait before trying to take a free partition lease, holding `held` leases already
 * with a fair share of `share` per instance: at once while under the share; beyond it, one
 * more lease period per lease over, so an instance under its share (polling every third of a
 * lease) takes it first, and a lease no one else wants is still taken.
 */
export function acquireDelayMs(held: number, share: number, leaseMs: number): number {
  return held < share ? 0 : (held - share + 1) * leaseMs;
}
