/**
 * Opaque event ids. The store's tokens are one store-wide sequence (or MongoDB resume tokens
 * holding the cluster time): shown as they are, consecutive ids would tell a tenant how much
 * every other tenant writes. So an id is the token sealed with AES-256-GCM under a key of the
 * tenant's own (its project environment, derived from one master key with HKDF): only the
 * tenant's own ids open, every other string (forged, altered, another tenant's) fails alike,
 * and the resume answer cannot tell them from an expired id.
 *
 * The nonce is an HMAC of the token (a synthetic IV): the same event gets the same id on every
 * instance and every stream, which keeps ids stable across reconnects and lets the streams of
 * one tenant share one frame. Tokens are padded to a multiple of 32 bytes first, so an id's
 * length says nothing about the sequence's magnitude either.
 */
import { createHmac, hkdfSync } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { DataScope } from '../../store/port.js';
import { IV_BYTES, seal, unseal } from './sealed.js';

/** Every Folio event id starts with it (the rest is base64url), as the service description says. */
export const EVENT_ID_PREFIX = 'evt_';
/**
 * The prefix ids had before they took the described form: the sealed part is the same, so an id
 * a client kept across the upgrade still resumes.
 */
export const LEGACY_EVENT_ID_PREFIX = 'e1_';
const ID_PREFIXES = [EVENT_ID_PREFIX, LEGACY_EVENT_ID_PREFIX] as const;
const PAD_BYTES = 32;
/** Longest token sealed (a MongoDB resume token is a few hundred bytes). */
const MAX_TOKEN_BYTES = 4096;

/** One tenant's id codec. */
export class ScopeEventIds {
  readonly #encryptionKey: Buffer;
  readonly #nonceKey: Buffer;
  /** The last token sealed and its id: the streams of one tenant ask for the same one in turn. */
  #lastToken = '';
  #lastId = '';

  constructor(keys: Buffer) {
    this.#encryptionKey = keys.subarray(0, 32);
    this.#nonceKey = keys.subarray(32, 64);
  }

  /** The opaque id of a store token. */
  encode(token: string): string {
    if (token === this.#lastToken) return this.#lastId;
    const plain = pad(token);
    const nonce = createHmac('sha256', this.#nonceKey).update(plain).digest().subarray(0, IV_BYTES);
    const id = `${EVENT_ID_PREFIX}${seal(this.#encryptionKey, nonce, plain)}`;
    this.#lastToken = token;
    this.#lastId = id;
    return id;
  }

  /** The store token an id of this tenant holds; null for anything else. */
  decode(id: string): string | null {
    const prefix = ID_PREFIXES.find((p) => id.startsWith(p));
    if (prefix === undefined || id.length > 2 * MAX_TOKEN_BYTES) return null;
    const plain = unseal(this.#encryptionKey, id.slice(prefix.length), PAD_BYTES);
    return plain && unpad(plain);
  }
}

/** Per-tenant codecs over one master key (the store's sealing key, shared by every instance). */
export class EventIds {
  readonly #byScope = new LRUCache<string, ScopeEventIds>({ max: 10_000 });

  constructor(private readonly masterKey: Buffer) {
    if (masterKey.length < 32) throw new Error('the event id master key must be at least 32 bytes');
  }

  forScope(scope: DataScope): ScopeEventIds {
    const name = `${scope.projectId}\u0000${scope.env}`;
    let ids = this.#byScope.get(name);
    if (!ids) {
      const keys = Buffer.from(hkdfSync('sha256', this.masterKey, 'folio-event-ids', name, 64));
      ids = new ScopeEventIds(keys);
      this.#byScope.set(name, ids);
    }
    return ids;
  }
}

/** Two length bytes, the token, zeros up to a multiple of PAD_BYTES. */
function pad(token: string): Buffer {
  const bytes = Buffer.from(token, 'utf8');
  if (bytes.length > MAX_TOKEN_BYTES) throw new RangeError('store token too long for an event id');
  const size = Math.ceil((bytes.length + 2) / PAD_BYTES) * PAD_BYTES;
  const plain = Buffer.alloc(size);
  plain.writeUInt16BE(bytes.length, 0);
  bytes.copy(plain, 2);
  return plain;
}

function unpad(plain: Buffer): string | null {
  const length = plain.readUInt16BE(0);
  if (length + 2 > plain.length || length === 0) return null;
  return plain.subarray(2, 2 + length).toString('utf8');
}
