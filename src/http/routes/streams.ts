/**
 * `GET /{ns}/{collection}/_stream`: a collection's changes as Server-Sent Events. Registered
 * before the document routes, so `_stream` is never read as a document id (client ids cannot
 * start with `_`).
 */
import { z } from 'zod';
import { notAcceptable } from '../../errors.js';
import { filterParamSchema } from '../../query/filterParams.js';
import { streamEventsParamSchema } from '../../services/streams/streamRequest.js';
import { collectionPath } from '../openapi/components.js';
import type { OperationDeclaration } from '../openapi/declare.js';
import { type FolioRouter, keyOf, param } from '../types.js';
import { declare, route } from './route.js';

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

export const streamChanges = declare({
  auth: 'key',
  method: 'get',
  path: '/{ns}/{collection}/_stream',
  operationId: 'streamChanges',
  tags: ['streams'],
  summary: 'The collection’s changes as Server-Sent Events (Pro, Team), resumable with Last-Event-ID',
  params: collectionPath,
  query: z.object({ events: streamEventsParamSchema, filter: filterParamSchema }),
  headers: z.object({
    Accept: z.literal(EVENT_STREAM_TYPE),
    'Last-Event-ID': z
      .string()
      .optional()
      .meta({ description: 'Resume after this event (`evt_...`); events are kept 5 minutes.' }),
  }),
  ok: {
    '200': {
      description:
        'An event stream: `event: document.created|updated|deleted`, `id: evt_<token>`, `data: {event, timestamp, collection, project, document}`; heartbeat comments; `stream.reset`, `stream.closed` and `stream.checkpoint` events',
      content: { [EVENT_STREAM_TYPE]: { schema: z.string() } },
      headers: z.object({
        'Cache-Control': z.string().meta({ description: '`no-cache, no-transform`' }),
        'X-Accel-Buffering': z
          .literal('no')
          .meta({ description: 'Proxies such as nginx must not buffer it.' }),
        Connection: z.literal('close').meta({ description: 'The connection ends with the stream.' }),
      }),
    },
  },
  errors: [400, 403, 410, 503],
});

export const STREAM_OPERATIONS: OperationDeclaration[] = [streamChanges];

export function registerStreamRoutes(router: FolioRouter): void {
  route(router, streamChanges, async (ctx) => {
    if (!acceptsEventStream(ctx.get('Accept'))) throw notAcceptable([EVENT_STREAM_TYPE]);
    const stream = await ctx.services.streams.open(
      keyOf(ctx),
      param(ctx, 'collection'),
      ctx.query,
      ctx.get('Last-Event-ID') || undefined,
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
    // The body ends with the connection, so it needs no chunked framing: each event goes to the
    // socket as one buffer, as is.
    ctx.res.removeHeader('Transfer-Encoding');
    // The stream writes the response itself (with its backpressure), not through a body stream:
    // nothing sits between it and the socket, which keeps an idle stream small.
    ctx.respond = false;
    stream.start(ctx.res);
  });
}
