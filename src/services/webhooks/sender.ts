/**
 * One webhook HTTP attempt over undici: POST, redirects never followed (a 3xx is a failed
 * attempt), a time limit over the whole exchange, at most `maxResponseBytes` of the answer read
 * (the rest is dropped with the connection), and target addresses checked as the socket
 * connects (targets.ts).
 */

import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, buildConnector, request } from 'undici';
import {
  assertLiteralAllowed,
  guardedLookup,
  type HostLookup,
  isForbiddenAddress,
  socketLookup,
  systemLookup,
  TargetRefusedError,
} from './targets.js';

export interface SendOptions {
  timeoutMs: number;
  maxResponseBytes: number;
  /** Aborts the attempt (shutdown); the outcome then says `aborted`. */
  signal?: AbortSignal | undefined;
}

export interface SendOutcome {
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
  /** True when `signal` ended the attempt: it says nothing about the receiver. */
  aborted: boolean;
}

export class WebhookSender {
  readonly #agent: Agent;

  constructor(
    private readonly allowPrivateTargets: boolean,
    readonly userAgent: string,
    /** How host names resolve: the system resolver, except in tests (targets.ts). */
    lookup: HostLookup = systemLookup,
  ) {
    this.#agent = new Agent({
      connect: allowPrivateTargets
        ? buildConnector({ lookup: socketLookup(lookup) })
        : guardedConnector(lookup),
      // Receivers are many and mostly idle between events: keep few sockets for long.
      keepAliveTimeout: 4_000,
      connections: 16,
    });
  }

  async send(
    url: string,
    body: string,
    headers: Record<string, string>,
    options: SendOptions,
  ): Promise<SendOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    try {
      if (!this.allowPrivateTargets) assertLiteralAllowed(new URL(url));
      const response = await request(url, {
        method: 'POST',
        dispatcher: this.#agent,
        headers: { 'content-type': 'application/json', 'user-agent': this.userAgent, ...headers },
        body,
        signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      let read = 0;
      for await (const chunk of response.body) {
        read += (chunk as Buffer).length;
        if (read >= options.maxResponseBytes) break;
      }
      // Leaving the loop early destroys the stream (and its connection): nothing more is read.
      const ok = response.statusCode >= 200 && response.statusCode < 300;
      return {
        ok,
        statusCode: response.statusCode,
        error: ok ? null : `HTTP ${response.statusCode}`,
        durationMs: elapsed(),
        aborted: false,
      };
    } catch (error) {
      const aborted = options.signal?.aborted === true;
      return {
        ok: false,
        statusCode: null,
        error: describeFailure(error, timeout.aborted),
        durationMs: elapsed(),
        aborted,
      };
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

/**
 * Connects through `guardedLookup` (names), then checks the address the socket is actually
 * connected to, whatever the URL spelled (an IPv6 form embedding an IPv4 address included):
 * a forbidden one is closed before a byte is sent.
 */
function guardedConnector(lookup: HostLookup): buildConnector.connector {
  const connect = buildConnector({ lookup: guardedLookup(lookup) });
  return (options, callback) =>
    connect(options, (error, socket) => {
      if (error || !socket) return callback(error ?? new Error('no socket'), null);
      const refused = refuseForbiddenSocket(socket);
      return refused ? callback(refused, null) : callback(null, socket);
    });
}

/**
 * The last check, on the address the socket is connected to: a forbidden one (or none) closes
 * the socket before a byte is sent and gives the reason. The lookup has refused such addresses
 * already; this holds whatever resolved the name or however the address was spelled.
 */
export function refuseForbiddenSocket(
  socket: Pick<Socket, 'remoteAddress' | 'destroy'>,
): TargetRefusedError | null {
  const address = socket.remoteAddress;
  if (address !== undefined && !isForbiddenAddress(address)) return null;
  socket.destroy();
  return new TargetRefusedError(
    `connected to ${address ?? 'an unknown address'}, a private, loopback or link-local address`,
  );
}

/** A short, safe reason: never a header, body or secret. */
export function describeFailure(error: unknown, timedOut: boolean): string {
  if (timedOut) return 'timeout';
  const refused = findCause(error, (e) => e instanceof TargetRefusedError);
  if (refused) return `refused target: ${refused.message}`;
  const coded = findCause(error, (e) => typeof (e as NodeJS.ErrnoException).code === 'string');
  const code = (coded as NodeJS.ErrnoException | null)?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  if (code) return `connection error: ${code}`;
  return 'connection error';
}

function findCause(error: unknown, match: (e: Error) => boolean): Error | null {
  let current: unknown = error;
  // Causes chain a few levels deep at most; the bound keeps a cyclic chain from looping.
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (match(current)) return current;
    current = current.cause;
  }
  return null;
}
