/**
 * The newest majority-committed cluster time this process knows of.
 *
 * A subscription without a resume token must see every change committed after `watch()`
 * returned, but a change stream is only established by a later, asynchronous `aggregate`. So
 * `watch()` reads this clock synchronously: the stream starts at that time
 * (`startAtOperationTime`) and each subscription drops the events at or before the time it read.
 * Every value fed in is a lower bound of "now": this process's own commits (majority write
 * concern), the cluster times of change events it received, and from the driver's heartbeats
 * (every 10 s by default) replica-set members' `lastWrite.majorityOpTime`, or on a sharded
 * cluster, whose mongos reports no `lastWrite`, the `$clusterTime` it gossips: the time a
 * mongos itself starts a "from now" change stream at.
 */
import { type Document, Timestamp } from 'mongodb';

export function compareTimestamps(a: Timestamp, b: Timestamp): number {
  if (a.t !== b.t) return a.t < b.t ? -1 : 1;
  if (a.i !== b.i) return a.i < b.i ? -1 : 1;
  return 0;
}

/**
 * Whether a subscription that started at `since` gets an event of cluster time `time`: only
 * when it is later. Unknown times are delivered (never drop what might be after the start).
 */
export function isAfterStart(since: Timestamp | null, time: Timestamp | null | undefined): boolean {
  return !since || !time || compareTimestamps(time, since) > 0;
}

/** A BSON Timestamp, also when it comes from another copy of the bson package. */
export function asTimestamp(value: unknown): Timestamp | null {
  if (value instanceof Timestamp) return value;
  if (typeof value !== 'object' || value === null) return null;
  const candidate = value as { _bsontype?: unknown; t?: unknown; i?: unknown };
  if (
    candidate._bsontype === 'Timestamp' &&
    typeof candidate.t === 'number' &&
    typeof candidate.i === 'number'
  ) {
    return new Timestamp({ t: candidate.t, i: candidate.i });
  }
  return null;
}

/** `lastWrite.majorityOpTime.ts` of a replica-set member's hello reply, if present. */
export function majorityOpTime(hello: Document): Timestamp | null {
  const lastWrite: unknown = hello.lastWrite;
  if (typeof lastWrite !== 'object' || lastWrite === null) return null;
  const opTime: unknown = (lastWrite as Document).majorityOpTime;
  if (typeof opTime !== 'object' || opTime === null) return null;
  return asTimestamp((opTime as Document).ts);
}

/**
 * The time a hello reply vouches for: a replica-set member's majority-commit time, else a
 * mongos's cluster time (`$clusterTime.clusterTime`); null for anything else.
 */
export function helloTime(hello: Document): Timestamp | null {
  const majority = majorityOpTime(hello);
  if (majority || hello.msg !== 'isdbgrid') return majority;
  const gossip: unknown = hello.$clusterTime;
  if (typeof gossip !== 'object' || gossip === null) return null;
  return asTimestamp((gossip as Document).clusterTime);
}

export class ClusterClock {
  #latest: Timestamp | null = null;
  #observedAtMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly nowMs: () => number = Date.now) {}

  /** Feed a cluster time known to be majority-committed; older values are ignored. */
  observe(value: unknown): void {
    const ts = asTimestamp(value);
    if (!ts) return;
    if (this.#latest === null || compareTimestamps(ts, this.#latest) >= 0) {
      this.#latest = ts;
      this.#observedAtMs = this.nowMs();
    }
  }

  observeHello(reply: Document): void {
    this.observe(helloTime(reply));
  }

  /** The newest known time, however old. A lower bound of now: safe for filtering. */
  get latest(): Timestamp | null {
    return this.#latest;
  }

  /**
   * The newest known time if it was learnt within `maxAgeMs`; null otherwise. Starting a new
   * stream from a stale time would replay everything since, so callers then start from the
   * server's present instead.
   */
  fresh(maxAgeMs: number): Timestamp | null {
    return this.nowMs() - this.#observedAtMs <= maxAgeMs ? this.#latest : null;
  }
}
