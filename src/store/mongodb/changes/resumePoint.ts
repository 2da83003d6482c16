/**
 * Where a catch-up stream starts, as pure functions (unit-tested with real tokens).
 *
 * A token a subscription resumes from is often not an event of its own collection: a checkpoint
 * (the shared stream's position, changes.ts) or the ring's position (eventRing.ts) is the last
 * event the shared stream read, from any collection, or its post-batch token. A stream narrowed
 * to one collection by `$match` cannot resume from an event its `$match` filters out: the server
 * fails it with 280 "the resume token was not found" (SERVER-107889, by design; Location7182803
 * on 6.0.9–6.0.16 and 7.0.0–7.0.12, SERVER-91406). So a narrowed stream starts at the token's
 * cluster time instead (`startAtOperationTime`, which the server checks against the oplog like
 * a resume: ChangeStreamHistoryLost once it is gone) and skips what is at or before the token:
 * the events of the same transaction or timestamp it already delivered.
 */
import { Timestamp } from 'mongodb';
import type { StreamTarget } from './changeEvents.js';
import { compareTokens, tokenFromString } from './changeEvents.js';
import type { StreamStart } from './reopeningStream.js';

/** KeyString type byte of a BSON Timestamp (key_string.cpp `CType::kTimestamp`). */
const KEYSTRING_TIMESTAMP = 0x82;

/**
 * The cluster time a resume token's `_data` starts with, or null when it is not a resume token.
 * `_data` is the hex of a KeyString whose first value is the cluster time: the type byte 0x82,
 * then the 64-bit timestamp big-endian (seconds in the high 32 bits, increment in the low 32).
 */
export function tokenClusterTime(token: string): Timestamp | null {
  if (!/^[0-9A-Fa-f]{18,}$/.test(token) || token.length % 2 !== 0) return null;
  if (Number.parseInt(token.slice(0, 2), 16) !== KEYSTRING_TIMESTAMP) return null;
  const t = Number.parseInt(token.slice(2, 10), 16);
  const i = Number.parseInt(token.slice(10, 18), 16);
  return new Timestamp({ t, i });
}

/** How a catch-up stream after `after` opens, and the tokens it must not deliver again. */
export interface CatchUpStart {
  start: StreamStart;
  /** Changes whose token is at or before this one were delivered already: skip them. */
  skipThrough: string | null;
}

/**
 * The start of a catch-up stream after `after` (an upper-case token): a stream of the shared
 * stream's own pipeline (`all`) resumes after it, since every token the feed hands out passed
 * that pipeline; a narrowed one starts at its cluster time and skips through it. Null when the
 * token holds no cluster time (no server could resume from it either).
 */
export function catchUpStart(after: string, target: StreamTarget): CatchUpStart | null {
  const time = tokenClusterTime(after);
  if (!time) return null;
  if (target.kind === 'all') return { start: { startAfter: tokenFromString(after) }, skipThrough: null };
  return { start: { startAtOperationTime: time }, skipThrough: after };
}

/**
 * Whether a change (by its token) is at or before `skipThrough`, so the catch-up stream that
 * started at that token's cluster time delivered it already. A change without a token string is
 * never skipped here (the mapping refuses it).
 */
export function deliveredBefore(token: string | null, skipThrough: string | null): boolean {
  return skipThrough !== null && token !== null && compareTokens(token, skipThrough) <= 0;
}
