/**
 * API keys this process authenticated recently, so most requests need no look-up of their key.
 *
 * The bound on staleness: an entry lives `ttlMs` from the look-up that made it and is never
 * extended by use. This process evicts at once whatever it changes itself (revoke, rotate, a
 * key's rules, plan change, a project's allowed origins); another process sharing the store (several instances on
 * MongoDB) sees such a change within `ttlMs`. Unknown and revoked keys are never cached, so a new
 * key works at once everywhere. `ttlMs` 0 turns the cache off.
 */
import { LRUCache } from 'lru-cache';
import type { ResolvedKey } from '../store/port.js';

/** What this process just revoked, for whoever holds something under it (open streams). */
export type Revocation =
  | { keyId: string }
  | { rulesOfKeyId: string }
  | { sessionHash: string }
  | { accountId: string };

interface Entry {
  resolved: ResolvedKey;
  expiresAtMs: number;
}

/** Entries kept at most; the oldest look-ups go first, however recently used. */
export const KEY_CACHE_MAX_ENTRIES = 10_000;

export class KeyCache {
  /** By key hash (a SHA-256 hex string, never a user-chosen name). */
  readonly #entries: LRUCache<string, Entry>;
  #generation = 0;
  readonly #revocationListeners: ((revocation: Revocation) => void)[] = [];

  constructor(
    readonly ttlMs: number,
    private readonly nowMs: () => number = Date.now,
    maxEntries = KEY_CACHE_MAX_ENTRIES,
  ) {
    this.#entries = new LRUCache({ max: maxEntries });
  }

  /**
   * Bumped by every eviction. A look-up reads it before asking the store and hands it to `set`,
   * which ignores results that an eviction may have overtaken (a revoke committed while the
   * look-up was in flight).
   */
  get generation(): number {
    return this.#generation;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(keyHash: string): ResolvedKey | null {
    // peek: a use leaves the order alone, so the oldest look-ups go first.
    const entry = this.#entries.peek(keyHash);
    if (!entry) return null;
    if (this.nowMs() >= entry.expiresAtMs) {
      this.#entries.delete(keyHash);
      return null;
    }
    return entry.resolved;
  }

  /** Cache a fresh look-up of an active key, unless an eviction happened since `generation`. */
  set(keyHash: string, resolved: ResolvedKey, generation: number): void {
    if (this.ttlMs <= 0 || generation !== this.#generation || resolved.key.status !== 'active') return;
    this.#entries.set(keyHash, { resolved, expiresAtMs: this.nowMs() + this.ttlMs });
  }

  /** Replace a cached entry's content (e.g. a newer `lastUsedAt`) without extending its life. */
  refresh(keyHash: string, resolved: ResolvedKey): void {
    const entry = this.#entries.peek(keyHash);
    if (entry) entry.resolved = resolved;
  }

  /** Called, synchronously, with every key, session or account this process revokes or changes. */
  onRevoked(listener: (revocation: Revocation) => void): void {
    this.#revocationListeners.push(listener);
  }

  /** A dashboard session ended here (logout): nothing is cached for it, but its streams close. */
  sessionEnded(sessionHash: string): void {
    this.#announce({ sessionHash });
  }

  #announce(revocation: Revocation): void {
    for (const listener of this.#revocationListeners) listener(revocation);
  }

  /** Forget the key (revoked or rotated here). */
  evictKey(keyId: string): void {
    this.#announce({ keyId });
    this.#forgetKey(keyId);
  }

  /** Forget the key: its rules changed here (it stays valid; what it reaches does not). */
  rulesChanged(keyId: string): void {
    this.#announce({ rulesOfKeyId: keyId });
    this.#forgetKey(keyId);
  }

  #forgetKey(keyId: string): void {
    this.#generation++;
    this.#deleteWhere((entry) => entry.resolved.key.id === keyId);
  }

  /** Forget every key of the account (its plan or one of its projects changed here). */
  evictAccount(accountId: string): void {
    this.#announce({ accountId });
    this.#generation++;
    this.#deleteWhere((entry) => entry.resolved.account.id === accountId);
  }

  #deleteWhere(doomed: (entry: Entry) => boolean): void {
    for (const [keyHash, entry] of this.#entries.entries()) if (doomed(entry)) this.#entries.delete(keyHash);
  }
}
