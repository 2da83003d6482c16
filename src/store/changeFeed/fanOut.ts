/**
 * The in-process fan-out of a store's one change source, shared by both stores. Subscriptions
 * are keyed by `scope + collection` (each store builds its own key string) or watch everything;
 * the source runs while there is at least one subscription, so `sourceCount` is 0 or 1 however
 * many collections and subscribers there are.
 */
import type { ChangeEvent, ChangeFeedEnd } from '../port.js';
import type { FeedSubscription } from './subscription.js';

/** A store's one change source over everything Folio writes. */
export interface ChangeSource {
  /** Start reading and publishing to the fan-out. */
  start(): void;
  /** Stop reading (the last subscription left, or the store closes). */
  stop(): void;
  /**
   * The position after the last event published: every later event will be published. Null
   * while unknown (a source still opening).
   */
  readonly position: string | null;
  /** Resolves once the source reads (events committed from then on will be published). */
  readonly ready: Promise<void>;
}

export class ChangeFanOut {
  readonly #byKey = new Map<string, Set<FeedSubscription>>();
  readonly #all = new Set<FeedSubscription>();
  #count = 0;
  #running = false;

  constructor(private readonly source: ChangeSource) {}

  /** Open database sources: 0 or 1. */
  get sourceCount(): number {
    return this.#running ? 1 : 0;
  }

  /** Subscriptions attached, for tests and metrics. */
  get size(): number {
    return this.#count;
  }

  /** Attach a subscription to `key` (null: every event). Starts the source if it is idle. */
  add(key: string | null, sub: FeedSubscription): void {
    if (key === null) {
      this.#all.add(sub);
    } else {
      let subs = this.#byKey.get(key);
      if (!subs) {
        subs = new Set();
        this.#byKey.set(key, subs);
      }
      subs.add(sub);
    }
    this.#count += 1;
    if (!this.#running) {
      this.#running = true;
      this.source.start();
    }
    // Everything after the source's position is published to it from now on.
    sub.startPosition = this.source.position;
  }

  /** Detach; stops the source with the last subscription. Idempotent. */
  remove(key: string | null, sub: FeedSubscription): void {
    let removed: boolean;
    if (key === null) {
      removed = this.#all.delete(sub);
    } else {
      const subs = this.#byKey.get(key);
      removed = subs?.delete(sub) ?? false;
      if (subs && subs.size === 0) this.#byKey.delete(key);
    }
    if (!removed) return;
    this.#count -= 1;
    if (this.#count === 0 && this.#running) {
      this.#running = false;
      this.source.stop();
    }
  }

  /** Hand one event of `key` to its subscriptions and to every watch-all subscription. */
  publish(key: string, event: ChangeEvent): void {
    const subs = this.#byKey.get(key);
    // A subscription that overflows leaves its set during the loop; Set iteration allows that.
    if (subs) for (const sub of subs) sub.deliver(event);
    for (const sub of this.#all) sub.deliver(event);
  }

  /** End the subscriptions of the keys `which` selects (a dropped collection or database). */
  endKeys(which: (key: string) => boolean, reason: ChangeFeedEnd): void {
    for (const [key, subs] of [...this.#byKey]) {
      if (which(key)) for (const sub of [...subs]) sub.end(reason);
    }
  }

  /** End every subscription (store closing, or the source's history is gone). */
  endAll(reason: ChangeFeedEnd): void {
    for (const subs of [...this.#byKey.values()]) for (const sub of [...subs]) sub.end(reason);
    for (const sub of [...this.#all]) sub.end(reason);
  }
}
