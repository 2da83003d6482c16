/**
 * How long the trash keeps a deleted document: the plan's `trashRetentionDays` (config/), counted
 * from the deletion to the millisecond. 0 turns the trash off for the plan: a delete erases.
 */
import { invalidQuery } from '../../errors.js';
import { isoNow } from '../../ids.js';
import type { TrashStamp } from '../../store/port.js';
import type { KeyContext } from '../context.js';

export const DAY_MS = 24 * 60 * 60 * 1000;

/** The stamp a delete at `nowMs` gets, or undefined when the plan keeps no trash. */
export function trashStampOf(ctx: KeyContext, nowMs: number): TrashStamp | undefined {
  const days = ctx.limits.trashRetentionDays;
  if (days <= 0) return undefined;
  return {
    deletedAt: isoNow(nowMs),
    apiKeyHint: ctx.key.hint,
    expiresAt: isoNow(nowMs + days * DAY_MS),
  };
}

/** `?purge=true|false` on a delete: erase at once instead of moving to the trash. */
export function parsePurge(raw: unknown): boolean {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  throw invalidQuery('purge', 'must be true or false');
}
