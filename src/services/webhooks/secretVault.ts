/**
 * The sealing key for webhook secrets: `webhooks.secretKey` when configured (kept off the
 * database), else the store's own key (created on first use; see the port's `sealingKey`).
 */
import { randomBytes } from 'node:crypto';
import type { Store } from '../../store/port.js';
import { SecretSealer } from './signing.js';

export class SecretVault {
  #sealer: Promise<SecretSealer> | null = null;

  constructor(
    private readonly store: Store,
    private readonly configuredKey: string,
  ) {}

  sealer(): Promise<SecretSealer> {
    this.#sealer ??= (async () => {
      const key = this.configuredKey
        ? Buffer.from(this.configuredKey, 'base64')
        : await this.store.webhooks.sealingKey(() => randomBytes(32));
      return new SecretSealer(key);
    })().catch((error: unknown) => {
      this.#sealer = null;
      throw error;
    });
    return this.#sealer;
  }
}
