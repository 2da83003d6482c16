/** Generation and hashing of API keys, session tokens and passwords. */
import { hash, randomBytes, randomInt, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import type { Env } from '../store/port.js';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PATTERN = /^folio_sk_(live|test)_[0-9A-Za-z]{40}$/;

/** 40 characters, each drawn uniformly (randomInt avoids modulo bias). */
function base62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(BASE62.length)];
  return out;
}

export function generateApiKey(env: Env): string {
  return `folio_sk_${env}_${base62(40)}`;
}

/** `folio_sk_live_...abcd`: enough to recognise a key, useless to an attacker. */
export function keyHint(rawKey: string): string {
  const env = rawKey.startsWith('folio_sk_live_') ? 'live' : 'test';
  return `folio_sk_${env}_...${rawKey.slice(-4)}`;
}

/** Keys and session tokens are high-entropy, so a fast hash is enough (no salt needed). */
export function hashToken(token: string): string {
  // One-shot: no Hash object per request (this runs on every authenticated request).
  return hash('sha256', token, 'hex');
}

export function generateSessionToken(): string {
  return `folio_sess_${randomBytes(32).toString('base64url')}`;
}

const SCRYPT_KEYLEN = 64;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scryptAsync(password, salt, SCRYPT_KEYLEN);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, saltB64, hashB64] = stored.split('$');
  if (scheme !== 'scrypt' || !saltB64 || !hashB64) return false;
  const expected = Buffer.from(hashB64, 'base64');
  const actual = await scryptAsync(password, Buffer.from(saltB64, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}
