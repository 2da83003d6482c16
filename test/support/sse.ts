/**
 * A change-stream client for the HTTP suites, on the `eventsource` package (a WHATWG EventSource
 * for Node that takes a custom fetch, so it can send the Bearer key). It records every named
 * event and error, and lets a test wait for the next one.
 */
import { type ErrorEvent, EventSource } from 'eventsource';
import { withTimeout } from './timeout.js';

export const STREAM_EVENTS = [
  'document.created',
  'document.updated',
  'document.deleted',
  'document.removed',
  'stream.closed',
  'stream.reset',
  'stream.checkpoint',
] as const;

export interface Received {
  type: string;
  /** The event's `id:` as the client library saw it (`lastEventId`). */
  id: string;
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are checked by assertions, not types
  data: any;
}

export interface StreamClientOptions {
  /** Sent on the first connection; the library sends it itself on reconnections. */
  lastEventId?: string;
  /** Counts every connection attempt the library makes. */
  onConnect?: () => void;
}

export class StreamClient {
  readonly source: EventSource;
  readonly received: Received[] = [];
  readonly errors: ErrorEvent[] = [];
  #cursor = 0;
  #wake: (() => void) | null = null;
  readonly opened: Promise<void>;

  constructor(url: string, key: string, options: StreamClientOptions = {}) {
    let first = true;
    this.source = new EventSource(url, {
      fetch: (input, init) => {
        options.onConnect?.();
        const headers = new Headers(init.headers);
        headers.set('Authorization', `Bearer ${key}`);
        if (first && options.lastEventId) headers.set('Last-Event-ID', options.lastEventId);
        first = false;
        return fetch(input, { ...init, headers });
      },
    });
    this.opened = new Promise((resolve, reject) => {
      this.source.addEventListener('open', () => resolve(), { once: true });
      this.source.addEventListener('error', (e) => reject(new Error(`stream failed: ${errorText(e)}`)), {
        once: true,
      });
    });
    this.opened.catch(() => {});
    for (const type of STREAM_EVENTS) {
      this.source.addEventListener(type, (e: MessageEvent) => {
        this.received.push({ type, id: e.lastEventId, data: JSON.parse(e.data as string) });
        this.#notify();
      });
    }
    this.source.addEventListener('error', (e) => {
      this.errors.push(e as ErrorEvent);
      this.#notify();
    });
  }

  /** The next event not yet taken (of `types`, skipping others), within `waitMs`. */
  async next(types: readonly string[] = STREAM_EVENTS, waitMs = 10_000): Promise<Received> {
    const deadline = Date.now() + waitMs;
    while (true) {
      while (this.#cursor < this.received.length) {
        const event = this.received[this.#cursor++]!;
        if (types.includes(event.type)) return event;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${types.join('|')} event within ${waitMs} ms`);
      await withTimeout(
        new Promise<void>((resolve) => {
          this.#wake = resolve;
        }),
        left,
        `a ${types.join('|')} event`,
      ).catch(() => {});
    }
  }

  /** The next `n` document events. */
  async documents(n: number): Promise<Received[]> {
    const out: Received[] = [];
    for (let i = 0; i < n; i++)
      out.push(await this.next(['document.created', 'document.updated', 'document.deleted']));
    return out;
  }

  /** Resolves at the next error event (a failed or dropped connection). */
  async nextError(waitMs = 10_000): Promise<ErrorEvent> {
    const seen = this.errors.length;
    const deadline = Date.now() + waitMs;
    while (this.errors.length === seen) {
      if (Date.now() > deadline) throw new Error('no error event');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return this.errors[seen]!;
  }

  close(): void {
    this.source.close();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }
}

function errorText(e: Event): string {
  const error = e as ErrorEvent;
  return `${error.code ?? ''} ${error.message ?? ''}`.trim();
}
