/**
 * Stream tickets: how a browser opens a change stream without its key in a URL. The native
 * `EventSource` cannot send `Authorization`, so a page asks for a ticket with its key (a
 * `fetch` with the header), then opens `/_stream?ticket=...`. A ticket is sealed (AES-256-GCM
 * under a key derived from the store's sealing key, so every instance opens it): it names the
 * key (by its hash, never the raw key), the project environment and the collection, and when
 * it stops opening new streams.
 *
 * Rules (see docs/streams.md):
 * - a request WITHOUT `Last-Event-ID` opens a new stream: only within `streams.ticketTtlMs` of
 *   minting, and only once (the first such use claims the ticket across instances);
 * - a request WITH a `Last-Event-ID` is the EventSource reconnecting: accepted with the same
 *   ticket while its key stays active, since only a client that read this stream holds one of
 *   the tenant's event ids (they are sealed per tenant: see eventIds.ts). Every stream opened
 *   by ticket starts with an id, so even a reconnect before the first event carries one.
 */
import { hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { IV_BYTES, seal, unseal } from './sealed.js';

export const TICKET_PREFIX = 'st1_';

export interface TicketClaims {
  /** The key's hash (as the store keeps it). */
  keyHash: string;
  projectId: string;
  collection: string;
  /** After this (ms since the epoch) the ticket opens no new stream. */
  expiresAtMs: number;
  /** Names this ticket's one first use. */
  nonce: string;
}

const claimsSchema = z.object({
  k: z.string(),
  p: z.string(),
  c: z.string(),
  e: z.number(),
  n: z.string(),
});

export class TicketSealer {
  readonly #key: Buffer;

  constructor(masterKey: Buffer) {
    this.#key = Buffer.from(hkdfSync('sha256', masterKey, 'folio-stream-tickets', 'v1', 32));
  }

  seal(claims: Omit<TicketClaims, 'nonce'>): { ticket: string; claims: TicketClaims } {
    const full = { ...claims, nonce: randomBytes(12).toString('base64url') };
    const plain = JSON.stringify({
      k: full.keyHash,
      p: full.projectId,
      c: full.collection,
      e: full.expiresAtMs,
      n: full.nonce,
    });
    const sealed = seal(this.#key, randomBytes(IV_BYTES), plain);
    return { ticket: `${TICKET_PREFIX}${sealed}`, claims: full };
  }

  /** The claims of a ticket this server sealed; null for anything else (forged, altered). */
  open(ticket: string): TicketClaims | null {
    if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 2048) return null;
    const plain = unseal(this.#key, ticket.slice(TICKET_PREFIX.length), 1);
    if (!plain) return null;
    try {
      const parsed = claimsSchema.safeParse(JSON.parse(plain.toString('utf8')));
      if (!parsed.success) return null;
      const { k, p, c, e, n } = parsed.data;
      return { keyHash: k, projectId: p, collection: c, expiresAtMs: e, nonce: n };
    } catch {
      return null;
    }
  }
}

/** Whether a ticket may open a stream now: its first use in time, or a reconnection. */
export function ticketAdmits(claims: TicketClaims, nowMs: number, reconnecting: boolean): boolean {
  return reconnecting || nowMs <= claims.expiresAtMs;
}
