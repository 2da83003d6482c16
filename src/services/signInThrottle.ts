/**
 * Guessing passwords and probing which emails are registered are slowed down: after
 * `auth.loginFailuresPerAccount` failed logins for one email, or `auth.loginFailuresPerAddress`
 * from one client address, within `auth.throttleWindowMs`, further logins of that email or
 * address are answered 429 with `Retry-After` (even with the right password) until the window
 * ends; a successful login clears its email's count. Signups are limited to
 * `auth.signupsPerAddress` per address and window, so the 409 an existing email gets cannot be
 * used to test many emails quickly.
 *
 * Counts live in this process's memory, bounded in entries and in time: each map keeps at most
 * MAX_TRACKED keys and forgets a key when its window ends. Several instances behind a load
 * balancer each count on their own (an attacker spread over N of them gets N times the
 * attempts); sessions and keys are unaffected.
 */

import { LRUCache } from 'lru-cache';
import type { Config } from '../config/schema.js';
import { AppError } from '../errors.js';

/** Keys (emails, addresses) each counter remembers at most; the oldest window goes first. */
export const MAX_TRACKED = 10_000;

interface Window {
  count: number;
  endsAtMs: number;
}

/**
 * Counts per key in fixed windows that open at a key's first count. The cache's order is the
 * order windows opened (a window is set once, when it opens, and read with `peek`, which leaves
 * the order alone; a key whose window ended is deleted before it counts again), so the ended
 * windows and, when full, the oldest ones go first.
 */
export class AttemptCounter {
  readonly #windows: LRUCache<string, Window>;

  constructor(
    private readonly windowMs: number,
    maxKeys: number = MAX_TRACKED,
  ) {
    this.#windows = new LRUCache({ max: maxKeys });
  }

  get size(): number {
    return this.#windows.size;
  }

  /** The count of `key` in its current window (0 when none is open). */
  count(key: string, nowMs: number): number {
    return this.#current(key, nowMs)?.count ?? 0;
  }

  /** Milliseconds until `key`'s window ends (0 when none is open). */
  remainingMs(key: string, nowMs: number): number {
    const window = this.#current(key, nowMs);
    return window ? window.endsAtMs - nowMs : 0;
  }

  /** Count one attempt of `key`; returns its count in the current window. */
  add(key: string, nowMs: number): number {
    this.#forgetEnded(nowMs);
    const window = this.#current(key, nowMs);
    if (window) {
      window.count += 1;
      return window.count;
    }
    this.#windows.set(key, { count: 1, endsAtMs: nowMs + this.windowMs });
    return 1;
  }

  /** Take back one count of `key` (an attempt counted in advance that turned out fine). */
  release(key: string, nowMs: number): void {
    const window = this.#current(key, nowMs);
    if (window && window.count > 0) window.count -= 1;
  }

  clear(key: string): void {
    this.#windows.delete(key);
  }

  #current(key: string, nowMs: number): Window | undefined {
    const window = this.#windows.peek(key);
    if (window && window.endsAtMs <= nowMs) {
      this.#windows.delete(key);
      return undefined;
    }
    return window;
  }

  #forgetEnded(nowMs: number): void {
    // Oldest first: the first window still open ends the walk.
    for (const key of this.#windows.rkeys()) {
      if (this.#windows.peek(key)!.endsAtMs > nowMs) return;
      this.#windows.delete(key);
    }
  }
}

export const tooManyAttempts = (message: string, retryAfterMs: number) =>
  new AppError(429, 'too_many_attempts', message, undefined, {
    'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
  });

export class SignInThrottle {
  readonly #loginAccounts: AttemptCounter;
  readonly #loginAddresses: AttemptCounter;
  readonly #signupAddresses: AttemptCounter;

  constructor(private readonly limits: Config['auth']) {
    this.#loginAccounts = new AttemptCounter(limits.throttleWindowMs);
    this.#loginAddresses = new AttemptCounter(limits.throttleWindowMs);
    this.#signupAddresses = new AttemptCounter(limits.throttleWindowMs);
  }

  /**
   * Throws 429 when the email or the address has used up its failed logins; otherwise counts
   * this attempt as a failure in advance, so parallel guesses cannot all pass the check while
   * the first are still being verified. loginSucceeded takes it back.
   */
  beginLogin(email: string, address: string, nowMs: number = Date.now()): void {
    const account = email.toLowerCase();
    if (this.#loginAccounts.count(account, nowMs) >= this.limits.loginFailuresPerAccount) {
      throw tooManyAttempts(
        `Too many failed logins for this account (FOLIO_AUTH_LOGIN_FAILURES_PER_ACCOUNT, ${this.limits.loginFailuresPerAccount}); retry after Retry-After seconds.`,
        this.#loginAccounts.remainingMs(account, nowMs),
      );
    }
    if (this.#loginAddresses.count(address, nowMs) >= this.limits.loginFailuresPerAddress) {
      throw tooManyAttempts(
        `Too many failed logins from this address (FOLIO_AUTH_LOGIN_FAILURES_PER_ADDRESS, ${this.limits.loginFailuresPerAddress}); retry after Retry-After seconds.`,
        this.#loginAddresses.remainingMs(address, nowMs),
      );
    }
    this.#loginAccounts.add(account, nowMs);
    this.#loginAddresses.add(address, nowMs);
  }

  /** The right password ends its email's count, and the address's count forgets this attempt. */
  loginSucceeded(email: string, address: string, nowMs: number = Date.now()): void {
    this.#loginAccounts.clear(email.toLowerCase());
    this.#loginAddresses.release(address, nowMs);
  }

  /** Count a signup attempt from `address`; throws 429 past the limit. */
  signupAttempt(address: string, nowMs: number = Date.now()): void {
    const count = this.#signupAddresses.add(address, nowMs);
    if (count > this.limits.signupsPerAddress) {
      throw tooManyAttempts(
        `Too many signups from this address (FOLIO_AUTH_SIGNUPS_PER_ADDRESS, ${this.limits.signupsPerAddress}); retry after Retry-After seconds.`,
        this.#signupAddresses.remainingMs(address, nowMs),
      );
    }
  }
}
