/**
 * Webhook secrets: issued as `whsec_...`, used as the HMAC-SHA256 key of every delivery, and
 * kept at rest sealed with AES-256-GCM (the webhook id is authenticated with it, so a sealed
 * secret copied onto another webhook does not open).
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

/** `sha256=` + hex HMAC-SHA256 of the raw body, keyed with the whole secret string. */
export function signature(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

const SEAL_VERSION = 'v1';
const IV_BYTES = 12;

export class SecretSealer {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the webhook sealing key must be 32 bytes');
  }

  seal(secret: string, webhookId: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(webhookId, 'utf8'));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [SEAL_VERSION, iv, cipher.getAuthTag(), sealed]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
      .join('.');
  }

  /** Throws when the sealed form was altered, belongs to another webhook or another key. */
  unseal(sealed: string, webhookId: string): string {
    const [version, iv, tag, data] = sealed.split('.');
    if (version !== SEAL_VERSION || !iv || !tag || data === undefined)
      throw new Error('unknown sealed secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(webhookId, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}
