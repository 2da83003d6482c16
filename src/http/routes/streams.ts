/**
 * `GET /{ns}/{collection}/_stream`: a collection's changes as Server-Sent Events. Registered
 * before the document routes, so `_stream` is never read as a document id (client ids cannot
 * start with `_`).
 */
import { z } from 'zod';
import { notAcceptable, notFound } from '../../errors.js';
import { filterParamSchema } from '../../query/filterParams.js';
import type { KeyContext } from '../../services/context.js';
import { streamEventsParamSchema } from '../../services/streams/streamRequest.js';
import { collectionPath } from '../openapi/components.js';
import { answer, type OperationDeclaration } from '../openapi/declare.js';
import { type Ctx, type FolioRouter, keyOf, param } from '../types.js';
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

/**
 * A browser's `GET .../_stream?ticket=` (its EventSource cannot send Authorization): the ticket
 * stands for the key that minted it (services/streams/tickets.ts). Null without a ticket.
 */
function ticketKey(ctx: Ctx): Promise<KeyContext> | null {
  const ticket = ctx.query.ticket;
  return ctx.method === 'GET' && typeof ticket === 'string' ? redeemTicket(ctx, ticket) : null;
}

async function redeemTicket(ctx: Ctx, ticket: string): Promise<KeyContext> {
  const { streams, apiKeys } = ctx.services;
  const resuming = ctx.get('Last-Event-ID') !== '';
  const claims = await streams.redeemTicket(ticket, param(ctx, 'collection'), resuming);
  const key = await apiKeys.authenticateHash(claims.keyHash);
  if (key.project.id !== claims.projectId) throw notFound('Project');
  ctx.state.streamTicket = true;
  return key;
}

export const streamChanges = declare({
  auth: 'key',
  method: 'get',
  path: '/{ns}/{collection}/_stream',
  operationId: 'streamChanges',
  tags: ['streams'],
  summary: 'The collection’s changes as Server-Sent Events (Pro, Team), resumable with Last-Event-ID',
  params: collectionPath,
  credential: ticketKey,
  query: z.object({
    events: streamEventsParamSchema,
    filter: filterParamSchema,
    ticket: z.string().optional().meta({
      description:
        'A stream ticket (`POST .../_stream/tickets`) in place of the Authorization header, for a browser’s EventSource.',
    }),
  }),
  headers: z.object({
    Accept: z.literal(EVENT_STREAM_TYPE),
    'Last-Event-ID': z.string().optional().meta({
      description:
        'Resume after this event (an opaque `evt_...` id from this stream); events are kept 5 minutes.',
    }),
  }),
  ok: {
    '200': {
      description:
        'A chunked event stream: `event: document.created|updated|deleted`, `id: evt_<opaque>`, `data: {event, timestamp, collection, project, document}`; under a key rule with a filter, `document.removed` (`document` is `{_id}` only) when an update took a document out of the rule; heartbeat comment lines; checkpoints (an `id:` line and no `data:`); `stream.reset` and `stream.closed` events',
      content: { [EVENT_STREAM_TYPE]: { schema: z.string() } },
      headers: z.object({
        'Cache-Control': z.string().meta({ description: '`no-cache, no-transform`' }),
        'X-Accel-Buffering': z
          .literal('no')
          .meta({ description: 'Proxies such as nginx must not buffer it.' }),
      }),
    },
  },
  errors: [400, 403, 410, 503],
});

export const mintStreamTicket = declare({
  auth: 'key',
  method: 'post',
  path: '/{ns}/{collection}/_stream/tickets',
  operationId: 'mintStreamTicket',
  tags: ['streams'],
  summary:
    'A short-lived ticket opening one change stream from a browser’s EventSource (any key of the project, read-only included)',
  params: collectionPath,
  // A ticket only lets its holder read a stream.
  readOnlyKeys: true,
  ok: answer(
    201,
    'Open `url` (the stream with `?ticket=`) within `expiresAt`; the ticket opens one stream, and lets that stream’s EventSource reconnect with its Last-Event-ID while the key is active',
    z.object({
      ticket: z.string().meta({ description: 'Opaque (`st1_...`).' }),
      expiresAt: z.string().meta({ description: 'ISO 8601: the ticket opens no new stream after it.' }),
      url: z.string().meta({ description: 'The stream’s path with the ticket.' }),
    }),
    z.object({ 'Cache-Control': z.string().meta({ description: '`no-store`' }) }),
  ),
  errors: [403],
});

export const STREAM_OPERATIONS: OperationDeclaration[] = [streamChanges, mintStreamTicket];

export function registerStreamRoutes(router: FolioRouter): void {
  route(router, streamChanges, async (ctx) => {
    if (!acceptsEventStream(ctx.get('Accept'))) throw notAcceptable([EVENT_STREAM_TYPE]);
    // The ticket authenticated the request (ticketKey); it is no stream parameter.
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
    });
    // The body is chunked (Node's default without a length), so a connection cut mid-stream is
    // an error to the client, never a normal end: every client library then reconnects with its
    // Last-Event-ID, where a clean end stops some of them for good (fetch-event-source). No
    // `Connection: close`: with it, Node 20's own fetch (undici 6) reads a cut as the end of the
    // body. Shutdown closes the connections the streams leave idle (server.ts).
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
  route(router, mintStreamTicket, async (ctx) => {
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
