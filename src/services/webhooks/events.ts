/** Webhook event names: one per kind of document change, and the test endpoint's own. */
import type { ChangeType } from '../../store/port.js';

export const DOCUMENT_EVENTS = ['document.created', 'document.updated', 'document.deleted'] as const;
export type DocumentEvent = (typeof DOCUMENT_EVENTS)[number];

/** Sent only by `POST .../{id}/test`. */
export const TEST_EVENT = 'webhook.test';

export function eventOf(type: ChangeType): DocumentEvent {
  return `document.${type}`;
}
