/**
 * Per-key rate limits. The window opens at a key's first request and lasts `rateLimit.windowMs`
 * (1 s), so a burst inside one second gets exactly the plan's number of successes however it
 * straddles clock seconds. Counts live in the store: in-process on the embedded store, shared
 * by all instances on MongoDB.
 */
import type { Config } from '../config/schema.js';
import { rateLimited } from '../errors.js';
import type { Store } from '../store/port.js';
import type { KeyContext } from './context.js';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix epoch seconds at which the current window ends. */
  reset: number;
}

function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  const headers: Record<string, string> = {};
  writeRateLimitHeaders(state, {
    setHeader: (name, value) => {
      headers[name] = value;
    },
  });
  return headers;
}

/** The same headers, set on a response (Node's own: no object per request). */
export function writeRateLimitHeaders(
  state: RateLimitState,
  response: { setHeader(name: string, value: string): unknown },
): void {
  response.setHeader('X-RateLimit-Limit', String(state.limit));
  response.setHeader('X-RateLimit-Remaining', String(state.remaining));
  response.setHeader('X-RateLimit-Reset', String(state.reset));
}

export class RateLimiter {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {}

  /** Count this request; throws 429 `rate_limited` (with the headers) beyond the plan's limit. */
  async hit(ctx: KeyContext, nowMs: number = Date.now()): Promise<RateLimitState> {
    const limit = ctx.limits.requestsPerSecond;
    const { count, resetAtMs } = await this.store.counters.hit(
      `rate:${ctx.key.id}`,
      this.config.rateLimit.windowMs,
      nowMs,
    );
    const state = { limit, remaining: Math.max(0, limit - count), reset: Math.ceil(resetAtMs / 1000) };
    if (count > limit) {
      const error = rateLimited(retryAfterSeconds(resetAtMs, nowMs));
      Object.assign(error.headers ?? {}, rateLimitHeaders(state));
      throw error;
    }
    return state;
  }
}

/**
 * `Retry-After` of a 429: whole seconds until the window resets, rounded up so a client that
 * waits them is never early, and at least 1 (0 would invite an immediate retry).
 */
export function retryAfterSeconds(resetAtMs: number, nowMs: number): number {
  return Math.max(1, Math.ceil((resetAtMs - nowMs) / 1000));
}
