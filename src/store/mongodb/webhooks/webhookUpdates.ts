/**
 * The MongoDB store's webhook decisions as data: filters and update pipelines, pure so that unit
 * tests can evaluate them (with mingo) without a server.
 */
import type { Document } from 'mongodb';

/**
 * One failed delivery: add one to the count and disable at `disableAt`, in one update pipeline
 * (one atomic document write: no other update can interleave between the count and the decision).
 */
export function failurePipeline(disableAt: number, at: string): Document[] {
  const reached = { $gte: [{ $add: ['$consecutiveFailures', 1] }, disableAt] };
  return [
    {
      $set: {
        consecutiveFailures: { $add: ['$consecutiveFailures', 1] },
        status: { $cond: [reached, 'disabled', '$status'] },
        updatedAt: {
          $cond: [{ $and: [reached, { $ne: ['$status', 'disabled'] }] }, { $literal: at }, '$updatedAt'],
        },
      },
    },
  ];
}

/** A lease that `holder` may take: free, its own, or expired by the server's clock. */
export function leaseTakeFilter(name: string, holder: string): Document {
  return {
    _id: name,
    $or: [{ holder: null }, { holder }, { $expr: { $lte: ['$leaseExpiresAt', '$$NOW'] } }],
  };
}

/** Take or renew: expiry counted from the server's clock, the same for every instance. */
export function leaseTakeUpdate(holder: string, ttlMs: number): Document[] {
  return [{ $set: { holder: { $literal: holder }, leaseExpiresAt: { $add: ['$$NOW', ttlMs] } } }];
}

/** The lease as long as `holder` still has it unexpired. */
export function leaseHeldFilter(name: string, holder: string): Document {
  return { _id: name, holder, $expr: { $gt: ['$leaseExpiresAt', '$$NOW'] } };
}

/** A delivery's attempt lock that `holder` may take: its own, or expired by the server's clock. */
export function attemptLockTakeFilter(deliveryId: string, holder: string): Document {
  return { _id: deliveryId, $or: [{ holder }, { $expr: { $lte: ['$expiresAt', '$$NOW'] } }] };
}

/** Take or renew an attempt lock: expiry counted from the server's clock. */
export function attemptLockTakeUpdate(holder: string, ttlMs: number): Document[] {
  return [{ $set: { holder: { $literal: holder }, expiresAt: { $add: ['$$NOW', ttlMs] } } }];
}

/**
 * Keep a webhook body until at least `keepUntilMs` (an upsert by `_id`): the body kept first
 * stays byte for byte, the time only moves later. `expiresAt` is a Date, which the TTL index
 * reads (the server removes the document once it passes, within its TTL monitor's minute).
 */
export function deliveryBodyKeepUpdate(body: string, keepUntilMs: number): Document[] {
  const until = new Date(keepUntilMs);
  return [
    {
      $set: {
        body: { $ifNull: ['$body', { $literal: body }] },
        expiresAt: { $max: [{ $ifNull: ['$expiresAt', until] }, until] },
      },
    },
  ];
}

/**
 * Push a kept body's time later without sending the body again: what every webhook's hand-over
 * after the first does (a 1 MiB body and 100 webhooks would otherwise send 100 MiB).
 */
export function deliveryBodyExtendUpdate(keepUntilMs: number): Document[] {
  return [{ $set: { expiresAt: { $max: ['$expiresAt', new Date(keepUntilMs)] } } }];
}
