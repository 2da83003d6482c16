/**
 * An EventStream over a real change subscription, for the SSE layer's unit suites: no server,
 * the stream writes to whatever Writable the suite hands it.
 */
import type { Writable } from 'node:stream';
import type { ScopeEventIds } from '../../src/services/streams/eventIds.js';
import { EventStream, type StreamOwner } from '../../src/services/streams/eventStream.js';
import type { FeedSubscription } from '../../src/store/changeFeed/subscription.js';

/** An owner that keeps every stream's slot and records nothing. */
export const quietOwner: StreamOwner<null> = {
  heartbeat: async () => true,
  closed: () => {},
  released: () => {},
  checkpointed: () => {},
};

export interface StreamParts<S extends FeedSubscription> {
  subscription: S;
  ids: ScopeEventIds;
  body: Writable;
  owner?: StreamOwner<null>;
  bufferBytes?: number;
  retryMs?: number;
  /** The stream's Last-Event-ID as a store token. */
  after?: string | null;
}

/** A subscription of token order (tokens are decimal numbers), ready, with room for 1,000 events. */
export function subscriptionSettings(): ConstructorParameters<typeof FeedSubscription>[0] {
  return { bufferLimit: 1000, compare: (a, b) => Number(a) - Number(b), onFinish: () => {} };
}

/** Starts an unfiltered stream of every event type over `parts.subscription`, writing to `parts.body`. */
export function startEventStream<S extends FeedSubscription>(parts: StreamParts<S>): EventStream<null> {
  parts.subscription.markReady();
  const stream = new EventStream({
    owner: parts.owner ?? quietOwner,
    holder: null,
    subscription: parts.subscription,
    project: 'p',
    types: new Set(['created', 'updated', 'deleted'] as const),
    filter: {},
    heartbeats: { add: () => {}, delete: () => {} },
    retryMs: parts.retryMs ?? 100,
    bufferLimit: 1000,
    bufferBytes: parts.bufferBytes ?? 1 << 20,
    ids: parts.ids,
    startId: null,
    after: parts.after ?? null,
  });
  stream.start(parts.body);
  return stream;
}
