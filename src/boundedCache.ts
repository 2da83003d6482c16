/**
 * A small map that forgets everything when full: for memos whose keys repeat and are rarely
 * many (regex patterns, sort paths, array probes and webhook-less collections, project names,
 * query counts toward automatic indexes, parsed query strings), where a rare refill is cheaper
 * than keeping an order of use. Keys are Map keys, never properties, so any string is safe as
 * one. Full is `capacity` keys, or, for a memo whose entries a client sizes (a query string),
 * `maxBytes` of the sizes `set` was given.
 */
export class BoundedCache<T> {
  readonly #entries = new Map<string, { value: T; bytes: number }>();
  #bytes = 0;

  constructor(
    private readonly capacity: number,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The sizes `set` was given, of the entries held. */
  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): T | undefined {
    return this.#entries.get(key)?.value;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** `bytes`: what the entry holds, approximately; one larger than `maxBytes` is not kept. */
  set(key: string, value: T, bytes = 0): void {
    this.delete(key);
    if (bytes > this.maxBytes) return;
    if (this.#entries.size >= this.capacity || this.#bytes + bytes > this.maxBytes) this.#clear();
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
  }

  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  #clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
  }
}
