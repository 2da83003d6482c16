/**
 * The per-key cap on concurrent streams (`streams.maxPerKey`), over the store's slot leases so
 * it holds across every instance sharing the store. A lease lives three heartbeats and each
 * heartbeat renews it: a crashed instance's streams stop counting within that time, and a closed
 * stream frees its slot at once.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import { tooManyStreams } from '../../errors.js';
import type { Store } from '../../store/port.js';

export interface Slot {
  keyId: string;
  id: string;
}

export class StreamSlotService {
  readonly #ttlMs: number;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.#ttlMs = 3 * config.streams.heartbeatMs;
  }

  /** One of the key's slots; 429 `too_many_streams` when all are taken. */
  async acquire(keyId: string): Promise<Slot> {
    const slot = { keyId, id: randomUUID() };
    const max = this.config.streams.maxPerKey;
    if (!(await this.store.streamSlots.acquire(keyId, slot.id, max, this.#ttlMs))) throw tooManyStreams(max);
    return slot;
  }

  /** Keep the slot; false when it was lost (expired while this process stalled) and is taken. */
  async renew(slot: Slot): Promise<boolean> {
    const slots = this.store.streamSlots;
    if (await slots.renew(slot.keyId, slot.id, this.#ttlMs)) return true;
    return slots.acquire(slot.keyId, slot.id, this.config.streams.maxPerKey, this.#ttlMs);
  }

  async release(slot: Slot): Promise<void> {
    await this.store.streamSlots.release(slot.keyId, slot.id);
  }
}
