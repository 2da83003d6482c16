/**
 * Stream slots in process memory: the embedded store serves one process, so a count per holder
 * is the whole truth, and a crash frees every slot with the streams. Leases never expire here.
 */
import type { StreamSlotRepository } from '../../port.js';

export class EmbeddedStreamSlots implements StreamSlotRepository {
  readonly #held = new Map<string, Set<string>>();

  async acquire(holder: string, slotId: string, max: number): Promise<boolean> {
    let slots = this.#held.get(holder);
    if (!slots) {
      slots = new Set();
      this.#held.set(holder, slots);
    }
    if (slots.has(slotId)) return true;
    if (slots.size >= max) return false;
    slots.add(slotId);
    return true;
  }

  async renew(holder: string, slotId: string): Promise<boolean> {
    return this.#held.get(holder)?.has(slotId) ?? false;
  }

  async release(holder: string, slotId: string): Promise<void> {
    const slots = this.#held.get(holder);
    if (!slots) return;
    slots.delete(slotId);
    if (slots.size === 0) this.#held.delete(holder);
  }
}
