/**
 * The webhook delivery job as the stores keep it: its name and what it carries. Below both
 * stores (the embedded one keeps a body while a job names it) and the job runner that runs it.
 */

export const DELIVERY_JOB = 'webhook-delivery';

/**
 * One event for one webhook. `dedupeKey` equals `deliveryId`: the store keeps one job per key,
 * so an event dispatched twice (a replay after a crash) is delivered once. The body is built
 * once per event; a job does not carry it (see DeliveryJob).
 */
export interface DeliveryTask {
  dedupeKey: string;
  deliveryId: string;
  webhookId: string;
  projectId: string;
  env: 'live' | 'test';
  collection: string;
  event: string;
  documentId: string | null;
  /** The event's time (ISO 8601), also sent as `X-Service-Timestamp`. */
  timestamp: string;
  /** The exact JSON body to send. */
  body: string;
  /** The event's key in `store.deliveryBodies`, the same for every webhook of the event. */
  bodyKey: string;
  /** When the dispatcher enqueued it (ms since epoch): for latency measurements. */
  enqueuedAt: number;
  /** When the job should run (ms since epoch); absent: now. Set when a retry is handed over. */
  runAt?: number;
}

/**
 * What a delivery job stores: the task without its body, which is kept once per event in
 * `store.deliveryBodies` under `bodyKey` (ten webhooks, one copy) and read back when the job
 * runs, so every attempt sends the same bytes. `body` is there only in jobs saved by a server
 * from before that change.
 */
export type DeliveryJob = Omit<DeliveryTask, 'body'> & { body?: string };
