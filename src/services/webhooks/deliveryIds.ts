/**
 * Delivery ids derived from what is delivered: the same (event, webhook) always gets the same
 * `dlv_` id, so an event read twice (a replay after a crash, two dispatchers during a lease
 * hand-over) becomes one job and one delivery. Shaped like every Folio id (`dlv_` + ULID): the
 * time part is the event's commit time, the rest comes from a hash of the event token and
 * the webhook id.
 */
import { createHash } from 'node:crypto';
import { ulid } from 'ulid';

export function deliveryIdFor(eventToken: string, webhookId: string, eventTimeMs: number): string {
  const digest = createHash('sha256').update(eventToken).update('\0').update(webhookId).digest();
  let next = 0;
  // ulid draws 16 random characters, each from one call: feed it hash bytes instead.
  const fromDigest = () => (digest[next++ % digest.length] as number) / 256;
  return `dlv_${ulid(eventTimeMs, fromDigest)}`;
}

/**
 * The key of an event's body among kept delivery bodies: the same for every webhook of the
 * event (the body is one), short and fixed in length whatever the store's event token.
 */
export function bodyKeyFor(eventToken: string): string {
  return `body_${createHash('sha256').update(eventToken).digest('base64url')}`;
}
