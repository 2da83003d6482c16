/** The body of a webhook delivery, in a fixed field order. */
import type { JsonObject } from '../../store/port.js';

export interface DeliveryPayload {
  event: string;
  /** The project's name, as in `/{ns}/...` paths. */
  project: string;
  collection: string;
  documentId: string | null;
  document: JsonObject;
  timestamp: string;
}

export function deliveryBody(p: DeliveryPayload): string {
  return JSON.stringify({
    event: p.event,
    project: p.project,
    collection: p.collection,
    documentId: p.documentId,
    document: p.document,
    timestamp: p.timestamp,
  });
}
