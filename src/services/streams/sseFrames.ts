/**
 * The Server-Sent Events wire format Folio writes. JSON never holds a raw newline, so `data:` is
 * always one line.
 *
 * Only document events and `stream.closed`/`stream.reset` end with a blank line (the line that
 * makes a client dispatch a block). The retry hint, the heartbeat and a checkpoint are single
 * lines with no blank line after them, so no client library hands them to application code:
 * fetch-event-source calls its `onmessage` for every blank-line-terminated block (comments and
 * id-only blocks included), and libraries on eventsource-parser drop a block without data, its
 * id included. A checkpoint is an `id:` line alone: fetch-event-source adopts it at once; a
 * WHATWG EventSource and eventsource-parser adopt it with the next block they dispatch, and
 * until then resume from their last event's id, which the server maps to the checkpoint (see
 * the aliases in index.ts). docs/streams.md has the table.
 */
import type { ChangeEvent, JsonObject } from '../../store/port.js';
import { EVENT_ID_PREFIX, type ScopeEventIds } from './eventIds.js';

/** Named events besides the document events, for clients that listen for them. */
export type ControlEvent = 'stream.closed' | 'stream.reset';

/**
 * The id a `stream.reset` carries: an SSE client reconnects with it as `Last-Event-ID`, which is
 * answered 410 `resync_required` (it opens under no tenant's key), so an unattended client
 * stops instead of looping.
 */
export const RESET_EVENT_ID = `${EVENT_ID_PREFIX}reset`;

export const HEARTBEAT_FRAME = ': heartbeat\n';

export function retryFrame(retryMs: number): string {
  return `retry: ${retryMs}\n`;
}

/** Moves the client's last event id (see the module comment); dispatches nothing anywhere. */
export function checkpointFrame(id: string): string {
  return `id: ${id}\n`;
}

/**
 * A stream opened by ticket (a browser) starts with its resume point: an id-only block, which a
 * WHATWG EventSource adopts at once without dispatching anything, so even a reconnection before
 * the first event resumes exactly (its ticket needs a Last-Event-ID to reconnect: tickets.ts).
 */
export function startIdFrame(id: string): string {
  return `id: ${id}\n\n`;
}

/**
 * Each event's frame, made once: every stream of a scope gets the same event object from the
 * fan-out, so a thousand subscribers cost one JSON serialisation, one id and one Buffer, written
 * as is to every socket (no copy or encoding per subscriber). Keyed by the event, so the frames
 * go with the events once no queue or socket holds them.
 */
const frames = new WeakMap<ChangeEvent, Buffer>();
const removedFrames = new WeakMap<ChangeEvent, Buffer>();

/** `event: document.<type>`, `id: <opaque id>`, `data: {event, timestamp, collection, project, document}`. */
export function documentFrame(event: ChangeEvent, project: string, ids: ScopeEventIds): Buffer {
  return (
    frames.get(event) ??
    kept(frames, event, eventFrame(`document.${event.type}`, event, event.document, project, ids))
  );
}

/**
 * `event: document.removed`: the update `event` took its document out of the key's rule. The
 * data names the document by `_id` only: its new content is what the key may not see.
 */
export function removedFrame(event: ChangeEvent, project: string, ids: ScopeEventIds): Buffer {
  return (
    removedFrames.get(event) ??
    kept(removedFrames, event, eventFrame('document.removed', event, { _id: event.documentId }, project, ids))
  );
}

/** `text` as the event's frame, kept for the other streams that send it. */
function kept(made: WeakMap<ChangeEvent, Buffer>, event: ChangeEvent, text: string): Buffer {
  const frame = Buffer.from(text);
  made.set(event, frame);
  return frame;
}

function eventFrame(
  name: string,
  event: ChangeEvent,
  document: JsonObject,
  project: string,
  ids: ScopeEventIds,
): string {
  const data = { event: name, timestamp: event.timestamp, collection: event.collection, project, document };
  return `event: ${name}\nid: ${ids.encode(event.token)}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function controlFrame(name: ControlEvent, data: JsonObject, id?: string): string {
  return `event: ${name}\n${id === undefined ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
}
