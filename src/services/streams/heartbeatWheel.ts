/**
 * The heartbeat schedule of every open stream, on ONE timer: a wheel of `slots` buckets that
 * turns one bucket per `periodMs / slots`. A member joins the bucket the wheel is on and beats
 * each time the wheel comes back to it: every `periodMs`, the first time up to one tick
 * (`periodMs / slots`) sooner. The beats of many streams spread over the period instead of one burst (each beat
 * also renews a slot lease in the store). A thousand streams cost one timer, not a thousand.
 */
export class HeartbeatWheel<T> {
  readonly #buckets: Set<T>[];
  /** Each member's bucket. */
  readonly #bucketOf = new Map<T, number>();
  /** The bucket the last `turn()` returned. */
  #current = 0;

  constructor(readonly slots: number) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError('slots must be a positive integer');
    this.#buckets = Array.from({ length: slots }, () => new Set<T>());
  }

  get size(): number {
    return this.#bucketOf.size;
  }

  /** Join: due on the `slots`-th turn from now, then every `slots` turns. */
  add(member: T): void {
    if (this.#bucketOf.has(member)) return;
    const bucket = this.#current;
    this.#buckets[bucket]?.add(member);
    this.#bucketOf.set(member, bucket);
  }

  delete(member: T): void {
    const bucket = this.#bucketOf.get(member);
    if (bucket === undefined) return;
    this.#buckets[bucket]?.delete(member);
    this.#bucketOf.delete(member);
  }

  /** Move one bucket on; returns the members due now (a copy: beating may remove them). */
  turn(): T[] {
    this.#current = (this.#current + 1) % this.slots;
    return [...(this.#buckets[this.#current] ?? [])];
  }
}

/** Buckets per period: a beat is late by at most a tenth of the period. */
export const HEARTBEAT_SLOTS = 10;

/** Runs a wheel on one interval timer, started with the first member and stopped with the last. */
export class HeartbeatTimer<T> {
  readonly #wheel = new HeartbeatWheel<T>(HEARTBEAT_SLOTS);
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly periodMs: number,
    private readonly beat: (member: T) => void,
  ) {}

  get size(): number {
    return this.#wheel.size;
  }

  add(member: T): void {
    this.#wheel.add(member);
    if (this.#timer) return;
    this.#timer = setInterval(() => this.#turn(), Math.max(1, this.periodMs / HEARTBEAT_SLOTS));
    this.#timer.unref();
  }

  delete(member: T): void {
    this.#wheel.delete(member);
    if (this.#wheel.size > 0 || !this.#timer) return;
    clearInterval(this.#timer);
    this.#timer = null;
  }

  #turn(): void {
    for (const member of this.#wheel.turn()) this.beat(member);
  }
}
