/**
 * A small map that forgets everything when full: for memos whose keys repeat and are rarely
 * many (regex patterns, sort paths, array probes and webhook-less collections, project names,
 * query counts toward automatic indexes), where a rare refill is cheaper than keeping an order
 * of use. Keys are Map keys, never properties, so any string is safe as one.
 */
export class BoundedCache<T> {
  readonly #entries = new Map<string, T>();

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): T | undefined {
    return this.#entries.get(key);
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  set(key: string, value: T): void {
    if (this.#entries.size >= this.capacity && !this.#entries.has(key)) this.#entries.clear();
    this.#entries.set(key, value);
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }
}
