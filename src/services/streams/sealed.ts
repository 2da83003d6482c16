/**
 * The AES-256-GCM envelope of what a stream hands a client to give back (event ids, stream
 * tickets): base64url of the IV, the ciphertext and the tag. Only the key's holder makes one
 * that opens; any other text (forged, altered, another key's) fails alike.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';

export const IV_BYTES = 12;
const TAG_BYTES = 16;

/** `plain` sealed under `key` with `iv` (IV_BYTES), as base64url. */
export function seal(key: Buffer, iv: Buffer, plain: Buffer | string): string {
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  // A string is read as UTF-8.
  return Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64url');
}

/** What `seal` sealed in `text` (at least `minPlainBytes` of it); null for any other text. */
export function unseal(key: Buffer, text: string, minPlainBytes: number): Buffer | null {
  const sealed = Buffer.from(text, 'base64url');
  // One spelling per text: the decoder would skip stray characters and trailing bits.
  if (sealed.length < IV_BYTES + minPlainBytes + TAG_BYTES || sealed.toString('base64url') !== text) {
    return null;
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
    decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
      decipher.final(),
    ]);
  } catch {
    return null;
  }
}
