/**
 * The Server-Sent Events wire format Folio writes. Each frame is complete (ends with a blank
 * line); JSON never holds a raw newline, so `data:` is always one line.
 */
import type { ChangeEvent, JsonObject } from '../../store/port.js';
import { EVENT_ID_PREFIX } from './streamRequest.js';

/** Named events besides the document events, for clients that listen for them. */
export type ControlEvent = 'stream.closed' | 'stream.reset' | 'stream.checkpoint';

/**
 * The id a `stream.reset` carries: an SSE client reconnects with it as `Last-Event-ID`, which is
 * answered 410 `resync_required`, so an unattended client stops instead of looping.
 */
export const RESET_EVENT_ID = `${EVENT_ID_PREFIX}reset`;

export const HEARTBEAT_FRAME = ': heartbeat\n\n';

export function retryFrame(retryMs: number): string {
  return `retry: ${retryMs}\n\n`;
}

export function eventId(token: string): string {
  return `${EVENT_ID_PREFIX}${token}`;
}

/**
 * The frame of the event last formatted: every stream of a scope gets the same event object
 * from the fan-out, one after the other, so a thousand subscribers cost one JSON serialisation
 * and one Buffer, written as is to every socket (no copy or encoding per subscriber).
 */
const lastFrame: { event: ChangeEvent | null; project: string; frame: Buffer } = {
  event: null,
  project: '',
  frame: Buffer.alloc(0),
};

/** `event: document.<type>`, `id: evt_<token>`, `data: {event, timestamp, collection, project, document}`. */
export function documentFrame(event: ChangeEvent, project: string): Buffer {
  if (lastFrame.event === event && lastFrame.project === project) return lastFrame.frame;
  const frame = Buffer.from(formatDocumentFrame(event, project));
  lastFrame.event = event;
  lastFrame.project = project;
  lastFrame.frame = frame;
  return frame;
}

function formatDocumentFrame(event: ChangeEvent, project: string): string {
  const name = `document.${event.type}`;
  const data = {
    event: name,
    timestamp: event.timestamp,
    collection: event.collection,
    project,
    document: event.document,
  };
  return `event: ${name}\nid: ${eventId(event.token)}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function controlFrame(name: ControlEvent, data: JsonObject, id?: string): string {
  return `event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}
