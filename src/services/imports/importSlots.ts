/**
 * The per-key cap on concurrent imports (`imports.maxConcurrentPerKey`): each import spools up
 * to the plan's byte limit to disk and then writes for as long as it takes, so one key running
 * many at once would take the disk and the store from everyone else. Held over the store's slot
 * leases (the ones change streams use, under a holder name of their own), so the cap holds
 * across every instance sharing the store; a lease is renewed while its import runs, and one
 * left by a crashed instance stops counting within LEASE_MS.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/schema.js';
import { AppError } from '../../errors.js';
import type { Store } from '../../store/port.js';

/** How often a running import renews its lease, and how long a lease lives without renewal. */
const RENEW_MS = 10_000;
const LEASE_MS = 3 * RENEW_MS;
/** Retry-After of the 429: a small import finishes within a second or two. */
const RETRY_AFTER_SECONDS = 2;

export function tooManyImports(max: number): AppError {
  return new AppError(
    429,
    'too_many_imports',
    `This API key already runs ${max} import(s) at once; wait for one to finish (Retry-After), then send this one again.`,
    { max },
    { 'Retry-After': String(RETRY_AFTER_SECONDS) },
  );
}

export class ImportSlots {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {}

  /** Run `work` in one of the key's import slots; 429 `too_many_imports` when all are taken. */
  async run<T>(keyId: string, work: () => Promise<T>): Promise<T> {
    const slots = this.store.streamSlots;
    // Prefixed, so an import never counts against the key's streams nor a stream against imports.
    const holder = `import:${keyId}`;
    const id = randomUUID();
    const max = this.config.imports.maxConcurrentPerKey;
    if (!(await slots.acquire(holder, id, max, LEASE_MS))) throw tooManyImports(max);
    // A lost renewal (the store briefly away) only lets the cap be exceeded for a while.
    const renewal = setInterval(() => void slots.renew(holder, id, LEASE_MS).catch(() => {}), RENEW_MS);
    renewal.unref();
    try {
      return await work();
    } finally {
      clearInterval(renewal);
      await slots.release(holder, id).catch(() => {});
    }
  }
}
