/**
 * `GET /{ns}/{collection}/_stream`: a collection's changes as Server-Sent Events. Registered
 * before the document routes, so `_stream` is never read as a document id (client ids cannot
 * start with `_`).
 */
import { notAcceptable } from '../../errors.js';
import { type FolioRouter, keyOf, param } from '../types.js';

export const EVENT_STREAM_TYPE = 'text/event-stream';

/** Whether an Accept header lists `text/event-stream` itself (not only `*\/*`), with q > 0. */
export function acceptsEventStream(accept: string): boolean {
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    if (type !== EVENT_STREAM_TYPE) return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

export function registerStreamRoutes(router: FolioRouter): void {
  router.get('/:ns/:collection/_stream', async (ctx) => {
    if (!acceptsEventStream(ctx.get('Accept'))) throw notAcceptable([EVENT_STREAM_TYPE]);
    // The ticket authenticated the request (middleware/apiKeyAuth.ts); it is no stream parameter.
    const { ticket: _ticket, ...query } = ctx.query;
    const byTicket = ctx.state.streamTicket === true;
    const stream = await ctx.services.streams.open(
      keyOf(ctx),
      param(ctx, 'collection'),
      byTicket ? query : ctx.query,
      ctx.get('Last-Event-ID') || undefined,
      byTicket,
    );
    // A stream is long-lived and latency-bound: no idle timeout, no Nagle delay.
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.set({
      'Content-Type': `${EVENT_STREAM_TYPE}; charset=utf-8`,
      'Cache-Control': 'no-cache, no-transform',
      // Proxies such as nginx must not buffer the stream.
      'X-Accel-Buffering': 'no',
      // The connection ends with the stream: nothing reuses it, and shutdown need not wait for it.
      Connection: 'close',
    });
    // The body is chunked (Node's default without a length), so a connection cut mid-stream is
    // an error to the client, never a normal end: every client library then reconnects with its
    // Last-Event-ID, where a clean end stops some of them for good (fetch-event-source).
    // The stream writes the response itself, not through a body stream: nothing sits between it
    // and the socket, which keeps an idle stream small.
    ctx.respond = false;
    stream.start(ctx.res);
  });
}

/**
 * `POST /{ns}/{collection}/_stream/tickets`: a short-lived ticket with which a browser's
 * EventSource opens the collection's stream, its key never in a URL (services/streams/tickets.ts).
 * Keyed routes only: the dashboard's streams go with its session cookie.
 */
export function registerStreamTicketRoutes(router: FolioRouter): void {
  router.post('/:ns/:collection/_stream/tickets', async (ctx) => {
    const collection = param(ctx, 'collection');
    const { ticket, expiresAt } = await ctx.services.streams.mintTicket(keyOf(ctx), collection);
    ctx.status = 201;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = {
      ticket,
      expiresAt,
      url: `/${encodeURIComponent(param(ctx, 'ns'))}/${encodeURIComponent(collection)}/_stream?ticket=${ticket}`,
    };
  });
}
