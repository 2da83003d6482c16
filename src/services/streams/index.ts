/**
 * Change streams (`GET /{ns}/{collection}/_stream`): the rules. Plan and parameters are checked
 * and a slot taken before anything is sent; a `Last-Event-ID` that cannot be resumed is answered
 * 410 `resync_required` before the stream opens (an SSE client does not reconnect after a
 * non-200 answer, so it never loops). Open streams re-check their key and plan every
 * `streams.keyCheckMs`: a revoked or rotated key's streams close within that time.
 */
import type { Config } from '../../config/schema.js';
import { AppError, planFeatureUnavailable, planLimitExceeded, resyncRequired } from '../../errors.js';
import { isoNow } from '../../ids.js';
import type { RawQuery } from '../../query/filterParams.js';
import type { Store } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import { isDashboardKey } from '../sessionAccess.js';
import { type CloseReason, EventStream, type StreamOwner } from './eventStream.js';
import { HeartbeatTimer } from './heartbeatWheel.js';
import { type Slot, StreamSlotService } from './slots.js';
import { parseStreamQuery, tokenOfEventId } from './streamRequest.js';

/** How long shutdown waits for clients to take their final event before cutting them off. */
const SHUTDOWN_DRAIN_MS = 1000;

/** What the service keeps about each open stream. */
interface Holder {
  keyId: string;
  accountId: string;
  /** A dashboard stream's session (token hash): it lasts while the session does. */
  sessionHash: string | null;
  slot: Slot;
}

type OpenStream = EventStream<Holder>;

export class StreamService {
  readonly #slots: StreamSlotService;
  readonly #open = new Set<OpenStream>();
  /** One timer beats every open stream. */
  readonly #heartbeats: HeartbeatTimer<OpenStream>;
  /** The streams' one owner: renews a stream's slot at its heartbeats, forgets it when closed. */
  readonly #owner: StreamOwner<Holder> = {
    heartbeat: (stream) => this.#slots.renew(stream.holder.slot).catch(() => true),
    closed: (stream) => {
      this.#open.delete(stream);
      if (this.#open.size === 0) this.#stopChecks();
      void this.#slots.release(stream.holder.slot).catch(() => {});
    },
  };
  #checkTimer: NodeJS.Timeout | null = null;
  #checking = false;
  #shuttingDown = false;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.#slots = new StreamSlotService(store, config);
    this.#heartbeats = new HeartbeatTimer(config.streams.heartbeatMs, (stream) => stream.heartbeat());
  }

  /** Streams open in this process. */
  get openCount(): number {
    return this.#open.size;
  }

  /**
   * Validate, take a slot, subscribe, and wait until the subscription is established. Throws the
   * client's error (403, 400, 429, 410) before any byte of the stream is sent. The caller starts
   * the returned stream on its response.
   */
  async open(
    ctx: KeyContext,
    collection: string,
    query: RawQuery,
    lastEventId: string | undefined,
  ): Promise<EventStream> {
    if (!ctx.limits.changeStreams) throw planFeatureUnavailable('Change streams', ctx.plan);
    const request = parseStreamQuery(query);
    if (request.filterCount > ctx.limits.maxFilters) {
      throw planLimitExceeded('filters', ctx.limits.maxFilters, ctx.plan);
    }
    let after: string | undefined;
    if (lastEventId !== undefined && lastEventId !== '') {
      const token = tokenOfEventId(lastEventId);
      if (token === null) throw resyncRequired('unknown');
      after = token;
    }
    if (this.#shuttingDown) throw shuttingDown();
    const slot = await this.#slots.acquire(ctx.key.id);
    const { bufferLimit, retryMs } = this.config.streams;
    const subscription = this.store.changes.watch(ctx.scope, collection, { after, bufferLimit });
    await subscription.ready;
    const refused = subscription.endedBy;
    if (refused !== null || this.#shuttingDown) {
      subscription.close();
      await this.#slots.release(slot);
      if (refused === 'history_lost') throw resyncRequired('expired');
      if (refused === 'invalid_token') throw resyncRequired('unknown');
      if (refused === 'invalidated') throw resyncRequired('invalidated');
      throw shuttingDown();
    }
    const stream: OpenStream = new EventStream({
      owner: this.#owner,
      holder: {
        keyId: ctx.key.id,
        accountId: ctx.account.id,
        sessionHash: isDashboardKey(ctx.key) ? ctx.key.keyHash : null,
        slot,
      },
      subscription,
      project: ctx.project.name,
      types: request.types,
      filter: request.filter,
      heartbeats: this.#heartbeats,
      retryMs,
      bufferLimit,
    });
    this.#open.add(stream);
    this.#startChecks();
    return stream;
  }

  /** Close every stream with a final event and wait (briefly) for it to reach the clients. */
  async shutdown(): Promise<void> {
    this.#shuttingDown = true;
    const streams = [...this.#open];
    for (const stream of streams) stream.close('shutdown');
    await Promise.all(streams.map((stream) => stream.drained(SHUTDOWN_DRAIN_MS)));
  }

  #startChecks(): void {
    if (this.#checkTimer) return;
    this.#checkTimer = setInterval(() => void this.#checkKeys(), this.config.streams.keyCheckMs);
    this.#checkTimer.unref();
  }

  #stopChecks(): void {
    if (this.#checkTimer) clearInterval(this.#checkTimer);
    this.#checkTimer = null;
  }

  /** One look-up per key (and account) with open streams, however many streams it has. */
  async #checkKeys(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const byKey = new Map<string, OpenStream[]>();
      for (const stream of this.#open) {
        const credential = stream.holder.sessionHash ?? stream.holder.keyId;
        const group = byKey.get(credential);
        if (group) group.push(stream);
        else byKey.set(credential, [stream]);
      }
      for (const streams of byKey.values()) {
        const reason = await this.#refusal(streams[0]!.holder).catch(() => null);
        if (reason) for (const stream of streams) stream.close(reason);
      }
    } finally {
      this.#checking = false;
    }
  }

  /** Why a key's (or a dashboard session's) streams must close now, or null while they may stream. */
  async #refusal({ keyId, accountId, sessionHash }: Holder): Promise<CloseReason | null> {
    if (sessionHash !== null) {
      if (!(await this.store.accounts.findSession(sessionHash, isoNow()))) return 'session_ended';
    } else {
      const key = await this.store.accounts.getKey(keyId);
      if (key?.status !== 'active') return 'key_revoked';
    }
    const account = await this.store.accounts.getAccount(accountId);
    if (!account || !this.config.plans[account.plan].changeStreams) return 'plan_changed';
    return null;
  }
}

function shuttingDown(): AppError {
  return new AppError(
    503,
    'shutting_down',
    'The server is shutting down; reconnect to another instance.',
    undefined,
    {
      'Retry-After': '1',
    },
  );
}
