/**
 * Change streams (`GET /{ns}/{collection}/_stream`): the rules. Plan and parameters are checked
 * and a slot taken before anything is sent; a `Last-Event-ID` that cannot be resumed is answered
 * 410 `resync_required` before the stream opens (an SSE client does not reconnect after a
 * non-200 answer, so it never loops), with one answer for an expired id, a forged one and
 * another tenant's (ids are sealed per tenant: eventIds.ts). A key revoked or rotated, or a
 * session ended, in this process closes its streams at once; open streams also re-check their
 * key and plan every `streams.keyCheckMs`, which is how other instances' revocations reach them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Config } from '../../config/schema.js';
import {
  AppError,
  planFeatureUnavailable,
  planLimitExceeded,
  resyncRequired,
  unauthorized,
} from '../../errors.js';
import { isoNow } from '../../ids.js';
import type { RawQuery } from '../../query/filterParams.js';
import type { Store } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import type { Revocation } from '../keyCache.js';
import { isDashboardKey } from '../sessionAccess.js';
import { EventIds } from './eventIds.js';
import { type CloseReason, EventStream, type StreamOwner } from './eventStream.js';
import { HeartbeatTimer } from './heartbeatWheel.js';
import { StreamRule } from './ruleView.js';
import { type Slot, StreamSlotService } from './slots.js';
import { parseStreamQuery } from './streamRequest.js';
import { type TicketClaims, TicketSealer, ticketAdmits } from './tickets.js';

/** How long shutdown waits for clients to take their final event before cutting them off. */
const SHUTDOWN_DRAIN_MS = 1000;

/** What the service keeps about each open stream. */
interface Holder {
  keyId: string;
  accountId: string;
  /** A dashboard stream's session (token hash): it lasts while the session does. */
  sessionHash: string | null;
  slot: Slot;
  /** What a checkpoint alias of this stream is filed under (see `#aliases`), without the token. */
  aliasScope: string;
  /** The key's rules when the stream opened (JSON): a change closes it (`rules_changed`). */
  rules: string;
}

/** Checkpoint aliases kept (about 200 bytes each). */
const MAX_ALIASES = 10_000;
/** Aliases followed in a row at most (a client that slept through several checkpoints). */
const MAX_ALIAS_HOPS = 16;

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
    },
    // A closed stream keeps its slot until its connection is gone (a client that reads nothing
    // is cut off 5 s after its final event): what closed streams still hold, at most
    // streams.bufferBytes and one event each, stays within the key's cap.
    released: (stream) => {
      void this.#slots.release(stream.holder.slot).catch(() => {});
    },
    checkpointed: (stream, from, to) => {
      if (from !== null) this.#aliases.set(`${stream.holder.aliasScope}${from}`, to);
    },
  };
  /**
   * Checkpoint aliases: "a client of this collection, event types and filter that last got
   * token A may resume after token B" (every event between them was skipped by those filters).
   * fetch-event-source adopts a checkpoint's id at once; a WHATWG EventSource and the clients
   * built on eventsource-parser (the `eventsource` package, eventsource-client) adopt it only
   * with the next block they dispatch, so after a cut they resume from their last event's id,
   * which this maps to the checkpoint: their resume point moves too, and does not expire while
   * their filters keep them quiet. Kept in this process only (see docs/streams.md).
   */
  readonly #aliases = new LRUCache<string, string>({ max: MAX_ALIASES });
  #checkTimer: NodeJS.Timeout | null = null;
  #keys: Promise<{ ids: EventIds; tickets: TicketSealer }> | null = null;
  #checking = false;
  #shuttingDown = false;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.#slots = new StreamSlotService(store, config);
    this.#heartbeats = new HeartbeatTimer(config.streams.heartbeatMs, (stream) => stream.heartbeat());
  }

  /**
   * Event ids and tickets are sealed under keys derived from one master key: the configured
   * `webhooks.secretKey`, else the store's sealing key, so that every instance opens them.
   */
  #sealing(): Promise<{ ids: EventIds; tickets: TicketSealer }> {
    this.#keys ??= (async () => {
      const configured = this.config.webhooks.secretKey;
      const master = configured
        ? Buffer.from(configured, 'base64')
        : await this.store.webhooks.sealingKey(() => randomBytes(32));
      return { ids: new EventIds(master), tickets: new TicketSealer(master) };
    })().catch((error: unknown) => {
      this.#keys = null;
      throw error;
    });
    return this.#keys;
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
    /** Opened with a ticket (a browser): the stream starts with an id to resume from. */
    byTicket = false,
  ): Promise<EventStream> {
    if (!ctx.limits.changeStreams) throw planFeatureUnavailable('Change streams', ctx.plan);
    const request = parseStreamQuery(query);
    if (request.filterCount > ctx.limits.maxFilters) {
      throw planLimitExceeded('filters', ctx.limits.maxFilters, ctx.plan);
    }
    const ids = (await this.#sealing()).ids.forScope(ctx.scope);
    let after: string | undefined;
    if (lastEventId !== undefined && lastEventId !== '') {
      const token = ids.decode(lastEventId);
      // The same answer as for an expired id: nothing tells a forged id from a lost one.
      if (token === null) throw resyncRequired('expired');
      after = token;
    }
    const reach = ctx.access.collection(collection);
    const aliasScope = [
      ctx.scope.projectId,
      ctx.scope.env,
      collection,
      [...request.types].sort().join(','),
      JSON.stringify(request.filter),
      // The rule skips events too: a checkpoint holds only for the rule it was sent under.
      JSON.stringify(reach.filter),
      '',
    ].join('\u0000');
    for (let hop = 0; after !== undefined && hop < MAX_ALIAS_HOPS; hop++) {
      const alias = this.#aliases.get(`${aliasScope}${after}`);
      if (alias === undefined) break;
      after = alias;
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
      if (refused === 'history_lost' || refused === 'invalid_token') throw resyncRequired('expired');
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
        aliasScope,
        rules: JSON.stringify(ctx.key.rules),
      },
      rule:
        reach.filter === null
          ? null
          : new StreamRule(
              reach.filter,
              Object.keys(request.filter).length > 0 ? request.filter : null,
              (id, version) => this.store.documents.getVersion(ctx.scope, collection, id, version),
            ),
      subscription,
      project: ctx.project.name,
      types: request.types,
      filter: request.filter,
      heartbeats: this.#heartbeats,
      retryMs,
      bufferLimit,
      bufferBytes: this.config.streams.bufferBytes,
      ids,
      after: after ?? null,
      startId:
        byTicket && after === undefined && subscription.startPosition
          ? ids.encode(subscription.startPosition)
          : null,
    });
    this.#open.add(stream);
    this.#startChecks();
    return stream;
  }

  /**
   * A ticket for `GET .../_stream?ticket=`, for a browser's EventSource (tickets.ts says what it
   * admits). Any key of the project may mint one; the stream then checks the key as usual.
   */
  async mintTicket(ctx: KeyContext, collection: string): Promise<{ ticket: string; expiresAt: string }> {
    if (!ctx.limits.changeStreams) throw planFeatureUnavailable('Change streams', ctx.plan);
    const { tickets } = await this.#sealing();
    const expiresAtMs = Date.now() + this.config.streams.ticketTtlMs;
    const { ticket } = tickets.seal({
      keyHash: ctx.key.keyHash,
      projectId: ctx.project.id,
      collection,
      expiresAtMs,
    });
    return { ticket, expiresAt: new Date(expiresAtMs).toISOString() };
  }

  /**
   * The key hash a ticket stands for, if it admits this request: a ticket of this collection,
   * either reconnecting (with `Last-Event-ID`) or opening its one stream in time. 401 otherwise,
   * one answer for every refusal.
   */
  async redeemTicket(ticket: string, collection: string, reconnecting: boolean): Promise<TicketClaims> {
    const { tickets } = await this.#sealing();
    const claims = tickets.open(ticket);
    const refused = unauthorized(
      'This stream ticket is unknown, expired or already used; ask for a new one.',
    );
    if (!claims || claims.collection !== collection || !ticketAdmits(claims, Date.now(), reconnecting)) {
      throw refused;
    }
    if (!reconnecting) {
      // The first use claims the ticket, across every instance sharing the store: a lease of
      // one slot, held until the ticket could not open a stream anyway.
      const ttlMs = Math.max(1, claims.expiresAtMs - Date.now()) + 1000;
      const holder = `ticket:${claims.nonce}`;
      const use = randomUUID();
      if (!(await this.store.streamSlots.acquire(holder, use, 1, ttlMs))) throw refused;
      const release = setTimeout(
        () => void this.store.streamSlots.release(holder, use).catch(() => {}),
        ttlMs,
      );
      release.unref();
    }
    return claims;
  }

  /** Close at once the streams of what this process just revoked (a key, a session, an account). */
  revoked(revocation: Revocation): void {
    if ('keyId' in revocation) {
      for (const stream of [...this.#open]) {
        const { keyId, sessionHash } = stream.holder;
        if (sessionHash === null && keyId === revocation.keyId) stream.close('key_revoked');
      }
    } else if ('rulesOfKeyId' in revocation) {
      // What the key may see changed: its streams close, and reconnect under the new rules.
      for (const stream of [...this.#open]) {
        const { keyId, sessionHash } = stream.holder;
        if (sessionHash === null && keyId === revocation.rulesOfKeyId) stream.close('rules_changed');
      }
    } else if ('sessionHash' in revocation) {
      for (const stream of [...this.#open]) {
        if (stream.holder.sessionHash === revocation.sessionHash) stream.close('session_ended');
      }
    } else {
      // A plan or project setting changed: look again now rather than at the next check.
      const streams = [...this.#open].filter((stream) => stream.holder.accountId === revocation.accountId);
      void this.#checkStreams(streams);
    }
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
      await this.#checkStreams(this.#open);
    } finally {
      this.#checking = false;
    }
  }

  /** Close those of `streams` whose key (or session) or plan may no longer stream. */
  async #checkStreams(streams: Iterable<OpenStream>): Promise<void> {
    const byKey = new Map<string, OpenStream[]>();
    for (const stream of streams) {
      const credential = stream.holder.sessionHash ?? stream.holder.keyId;
      const group = byKey.get(credential);
      if (group) group.push(stream);
      else byKey.set(credential, [stream]);
    }
    for (const group of byKey.values()) {
      const reason = await this.#refusal(group[0]!.holder).catch(() => null);
      if (reason) for (const stream of group) stream.close(reason);
    }
  }

  /** Why a key's (or a dashboard session's) streams must close now, or null while they may stream. */
  async #refusal({ keyId, accountId, sessionHash, rules }: Holder): Promise<CloseReason | null> {
    if (sessionHash !== null) {
      if (!(await this.store.accounts.findSession(sessionHash, isoNow()))) return 'session_ended';
    } else {
      const key = await this.store.accounts.getKey(keyId);
      if (key?.status !== 'active') return 'key_revoked';
      // A stream applies the rules it opened with; it reconnects under the new ones.
      if (JSON.stringify(key.rules) !== rules) return 'rules_changed';
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
