/**
 * Fan-out of one change source per collection to any number of subscriptions, shared by both
 * stores: the store opens one database cursor/poller per (scope, collection) and this module
 * hands each event to every subscriber's own queue.
 */
import type { ChangeEvent, ChangeFeedEnd, ChangeSubscription } from './port.js';

/** A subscription backed by an in-memory queue that a source pushes into. */
export class QueueSubscription implements ChangeSubscription {
  #queue: ChangeEvent[] = [];
  #wake: (() => void) | null = null;
  #closed = false;
  endedBy: ChangeFeedEnd | null = null;

  constructor(private readonly onClose: (sub: QueueSubscription) => void = () => {}) {}

  get closed(): boolean {
    return this.#closed;
  }

  push(event: ChangeEvent): void {
    if (this.#closed) return;
    this.#queue.push(event);
    this.#notify();
  }

  /** End from the source side (history lost, invalidated, store closing). */
  end(reason: ChangeFeedEnd): void {
    if (this.#closed) return;
    this.endedBy = reason;
    this.#finish();
  }

  close(): void {
    this.#finish();
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose(this);
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = null;
    wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ChangeEvent> {
    while (true) {
      const next = this.#queue.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }
}

/**
 * Keeps one source per key (e.g. `scope/collection`) alive while it has subscribers.
 * `open` starts the source and returns a function that stops it.
 */
export class FanOut<Key extends string = string> {
  #groups = new Map<Key, { subs: Set<QueueSubscription>; stop: () => void }>();

  constructor(
    private readonly open: (
      key: Key,
      emit: (e: ChangeEvent) => void,
      end: (r: ChangeFeedEnd) => void,
    ) => () => void,
  ) {}

  /** Subscribers currently attached to `key` (0 when no source is open). */
  size(key: Key): number {
    return this.#groups.get(key)?.subs.size ?? 0;
  }

  /** Open sources: one per key with subscribers, never one per subscriber. */
  get sourceCount(): number {
    return this.#groups.size;
  }

  subscribe(key: Key, sub: QueueSubscription): void {
    let group = this.#groups.get(key);
    if (!group) {
      const subs = new Set<QueueSubscription>();
      const created = { subs, stop: () => {} };
      this.#groups.set(key, created);
      created.stop = this.open(
        key,
        (event) => {
          for (const s of subs) s.push(event);
        },
        (reason) => {
          for (const s of [...subs]) s.end(reason);
        },
      );
      group = created;
    }
    group.subs.add(sub);
  }

  unsubscribe(key: Key, sub: QueueSubscription): void {
    const group = this.#groups.get(key);
    if (!group) return;
    group.subs.delete(sub);
    if (group.subs.size === 0) {
      this.#groups.delete(key);
      group.stop();
    }
  }

  /** End every subscription (store shutting down). */
  closeAll(reason: ChangeFeedEnd): void {
    for (const [key, group] of [...this.#groups]) {
      for (const s of [...group.subs]) s.end(reason);
      // Ending the last subscriber normally unsubscribes and stops the source already.
      if (this.#groups.get(key) === group) {
        this.#groups.delete(key);
        group.stop();
      }
    }
  }
}
