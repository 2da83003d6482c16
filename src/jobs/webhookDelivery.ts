/** Who runs the webhook delivery job (what it carries: store/deliveryJob.ts). */

import type { DeliveryTask } from '../store/deliveryJob.js';

/**
 * Runs one attempt of a delivery; answers when the next attempt is due, or null when the
 * delivery is over (succeeded, failed for good, cancelled). `signal` aborts at shutdown: the
 * handler then records nothing and answers a time, so the attempt is made again later.
 */
export type DeliveryHandler = (task: DeliveryTask, signal: AbortSignal) => Promise<Date | null>;

/**
 * Where the dispatcher hands deliveries that need another attempt (retries). Enqueueing the
 * same `dedupeKey` again does nothing.
 */
export interface DeliveryQueue {
  enqueueDelivery(task: DeliveryTask): Promise<void>;
}
