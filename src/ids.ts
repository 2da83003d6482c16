/** Prefixed, time-ordered identifiers (`doc_01J...`): sortable, so default order is creation order. */
import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

export type IdPrefix = 'doc' | 'key' | 'wh' | 'evt' | 'dlv' | 'acc' | 'prj' | 'req' | 'sch';

/**
 * A PRNG for ulid over a pool of cryptographically random bytes, refilled `poolSize` bytes at
 * a time. ulid draws one value per character (16 on each new millisecond); its default asks the
 * OS for one byte per draw, about 32 µs per id here against 0.6 µs from the pool. A byte / 256
 * is uniform over ulid's 32 characters (256 is a multiple of 32).
 */
export function pooledRandom(poolSize = 4096): () => number {
  const pool = Buffer.alloc(poolSize);
  let next = poolSize;
  return () => {
    if (next === poolSize) {
      randomFillSync(pool);
      next = 0;
    }
    return (pool[next++] as number) / 256;
  };
}

// Monotonic: ids made in the same millisecond still sort in creation order.
const nextUlid = monotonicFactory(pooledRandom());

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}

/** The last millisecond isoNow formatted, and its text. */
let lastMs = Number.NaN;
let lastIso = '';

/**
 * ISO 8601 UTC with milliseconds; fixed width, so string order is time order. The text of the
 * last millisecond asked is kept: a bulk request or an import batch stamps many documents in the
 * same millisecond, and `toISOString` costs 0.5 µs a call where the comparison costs nothing.
 */
export function isoNow(ms: number = Date.now()): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
