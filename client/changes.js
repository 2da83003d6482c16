/**
 * `collection.subscribe()`: a collection's change stream (docs/streams.md) delivered to a
 * callback, each event once and in order, across cuts, server restarts and `stream.closed`.
 *
 * - Where `EventSource` exists (browsers), the native one opens the stream with a ticket minted
 *   by the key (the key goes in a header, never in a URL) and reconnects by itself with its
 *   Last-Event-ID. An EventSource gives up on any non-200 answer without saying which; the
 *   subscription then goes on with `fetch` from the last event it delivered.
 * - Elsewhere (Node), `fetch` reads the stream and the subscription reconnects with the id of
 *   the last event it delivered as `Last-Event-ID`.
 * - `stream.reset`, or a 410 on reconnection: events were lost, so `onReset` tells the
 *   application to re-read, and the stream starts again from now.
 * - 429 and 5xx are retried; any other refusal (400, 401 revoked key, 403, 404) stops it and goes
 *   to `onError`.
 */
import { errorOf, queryString, retryAfterMs, send, sleep } from './http.js';

const DOCUMENT_EVENTS = ['document.created', 'document.updated', 'document.deleted', 'document.removed'];

/** Between reconnections when the server named no `retry:` yet, and the most ever waited. */
const FIRST_DELAY_MS = 1000;
const MAX_DELAY_MS = 30_000;

export function subscribeChanges(http, path, options, onEvent, handlers) {
  const subscription = new Subscription(http, path, options, onEvent, handlers);
  subscription.start();
  return () => subscription.stop();
}

class Subscription {
  constructor(http, path, { events, filter }, onEvent, handlers) {
    this.http = http;
    this.path = path;
    // `events` as the stream names them: `created`, not `document.created`.
    const types = events?.map((type) => type.replace(/^document\./, ''));
    this.query = queryString({ events: types, filter });
    this.onEvent = onEvent;
    this.handlers = handlers;
    /** The id of the last event delivered (or a checkpoint after it): where a reconnection resumes. */
    this.lastId = null;
    this.delayMs = FIRST_DELAY_MS;
    this.stopped = false;
    this.abort = new AbortController();
    this.source = null;
  }

  start() {
    const run = typeof globalThis.EventSource === 'function' ? this.openSource() : this.readLoop();
    run.catch((error) => this.fail(error));
  }

  stop() {
    this.stopped = true;
    this.abort.abort();
    this.source?.close();
  }

  fail(error) {
    if (this.stopped) return;
    this.stop();
    if (this.handlers.onError) this.handlers.onError(error);
    else console.error('folio: a subscription stopped:', error);
  }

  /** Hands a document event to the application; its id is then where a reconnection resumes. */
  deliver(data, id) {
    if (this.stopped) return;
    const event = { ...JSON.parse(data), id };
    if (id) this.lastId = id;
    // The application's own error must not end the subscription, nor go unseen.
    try {
      this.onEvent(event);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  /** Events were lost: the application re-reads; the stream starts again from now. */
  reset(info) {
    this.lastId = null;
    if (!this.stopped) this.handlers.onReset?.(info);
  }

  /** The browser's way: a ticket, then the native EventSource (see the module comment). */
  async openSource() {
    const res = await send(this.http, 'POST', `${this.path}/_stream/tickets`, {
      retry: true,
      signal: this.abort.signal,
    });
    const { url } = await res.json();
    if (this.stopped) return;
    const source = new EventSource(`${this.http.base}${url}${this.query.replace('?', '&')}`);
    this.source = source;
    let opened = false;
    source.onopen = () => {
      opened = true;
    };
    for (const type of DOCUMENT_EVENTS)
      source.addEventListener(type, (e) => this.deliver(e.data, e.lastEventId));
    source.addEventListener('stream.reset', (e) => {
      // Closed first, or it would reconnect with the reset's id (which is answered 410).
      source.close();
      this.reset(JSON.parse(e.data));
      this.openSource().catch((error) => this.fail(error));
    });
    source.onerror = () => {
      // CONNECTING: it reconnects by itself. CLOSED: a non-200 it will not say more about.
      if (source.readyState !== EventSource.CLOSED || this.stopped) return;
      this.source = null;
      // Opened and no event yet: nothing to resume from, and events may have come meanwhile.
      if (opened && this.lastId === null) this.reset({ reason: 'unknown', message: 'The stream failed.' });
      this.readLoop().catch((error) => this.fail(error));
    };
  }

  /** Node's way, and a browser's once its EventSource gave up: fetch, reconnecting until stopped. */
  async readLoop() {
    let failures = 0;
    while (!this.stopped) {
      const headers = { Accept: 'text/event-stream' };
      if (this.http.key) headers.Authorization = `Bearer ${this.http.key}`;
      if (this.lastId) headers['Last-Event-ID'] = this.lastId;
      let res;
      try {
        res = await fetch(`${this.http.base}${this.path}/_stream${this.query}`, {
          headers,
          signal: this.abort.signal,
        });
      } catch {
        await this.pause(++failures);
        continue;
      }
      if (res.status === 200) {
        failures = 0;
        await this.read(res.body).catch(() => {});
        await this.pause(0);
      } else if (res.status === 410) {
        const error = await errorOf(res);
        this.reset({ reason: error.details?.reason ?? 'expired', message: error.message });
      } else if (res.status === 429 || res.status >= 500) {
        await res.body?.cancel();
        await sleep(retryAfterMs(res, this.backoff(++failures)), this.abort.signal);
      } else {
        throw await errorOf(res);
      }
    }
  }

  backoff(failures) {
    return Math.min(this.delayMs * 2 ** Math.max(0, failures - 1), MAX_DELAY_MS);
  }

  pause(failures) {
    return sleep(failures === 0 ? this.delayMs : this.backoff(failures), this.abort.signal);
  }

  /** Reads one response's events until it ends, is cut, or a `stream.reset` (which ends it here). */
  async read(body) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    const parser = new EventParser((type, data, id) => {
      if (DOCUMENT_EVENTS.includes(type)) this.deliver(data, id);
      else if (type === 'stream.reset') {
        this.reset(JSON.parse(data));
        return false;
      }
      return true;
    });
    parser.onId = (id) => {
      this.lastId = id;
    };
    parser.onRetry = (ms) => {
      this.delayMs = ms;
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !parser.push(value)) return reader.cancel().catch(() => {});
    }
  }
}

/**
 * Server-Sent Events as the WHATWG spec parses them: lines (LF, CRLF or CR), `field: value`,
 * comments, a blank line dispatching the block. One addition: a bare `id:` line (a Folio
 * checkpoint, sent alone and never cut from an event) is adopted at the comment line after it,
 * so a reconnection resumes past events a filter skipped.
 */
class EventParser {
  constructor(dispatch) {
    this.dispatch = dispatch;
    this.onId = () => {};
    this.onRetry = () => {};
    this.buffer = '';
    /** The last id seen, as an event's id (WHATWG: a block without `id:` keeps the one before). */
    this.lastId = null;
    this.block = { type: '', data: [], id: null };
  }

  /** Takes a chunk of text; false once `dispatch` returned false (the stream is done with). */
  push(text) {
    this.buffer += text;
    // A CR at the end may be half of a CRLF: wait for the next chunk.
    const lineEnd = /\r\n|\r(?!$)|\n/;
    for (let match = lineEnd.exec(this.buffer); match; match = lineEnd.exec(this.buffer)) {
      const line = this.buffer.slice(0, match.index);
      this.buffer = this.buffer.slice(match.index + match[0].length);
      if (!this.line(line)) return false;
    }
    return true;
  }

  line(line) {
    const block = this.block;
    if (line === '') {
      this.block = { type: '', data: [], id: null };
      if (block.id !== null) this.lastId = block.id;
      if (block.data.length > 0)
        return this.dispatch(block.type || 'message', block.data.join('\n'), this.lastId);
      if (block.id !== null) this.onId(block.id);
      return true;
    }
    if (line.startsWith(':')) {
      if (block.id !== null && block.type === '' && block.data.length === 0) {
        this.lastId = block.id;
        this.onId(block.id);
        block.id = null;
      }
      return true;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') block.type = value;
    else if (field === 'data') block.data.push(value);
    else if (field === 'id' && !value.includes('\0')) block.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.onRetry(Number(value));
    return true;
  }
}
