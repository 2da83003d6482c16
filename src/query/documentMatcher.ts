/**
 * Whether one stored document matches a canonical filter, in memory, with MongoDB's semantics:
 * for checks that have the document at hand (a change-stream event, a webhook) rather than a
 * store to ask. Supports exactly the subset `filterParams.ts` generates.
 */

import { LeafArray, MISSING, type PathSlot, pathSlots } from '../store/documentQuery/pathValues.js';
import type { JsonObject, JsonValue, StoredFilter } from '../store/port.js';

export function matchesFilter(doc: JsonObject, filter: StoredFilter): boolean {
  return Object.entries(filter).every(([key, value]) => {
    if (key === '$and') {
      if (!Array.isArray(value)) throw new Error('matchesFilter: $and needs an array');
      return value.every((sub) => matchesFilter(doc, sub as StoredFilter));
    }
    if (key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) throw new Error(`matchesFilter: ${key} needs an array`);
      const any = value.some((sub) => matchesFilter(doc, sub as StoredFilter));
      return key === '$or' ? any : !any;
    }
    if (key.startsWith('$')) throw new Error(`matchesFilter: unsupported operator ${key}`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new Error(`matchesFilter: '${key}' needs an operator object`);
    }
    const slots = pathSlots(doc, key.split('.'));
    return Object.entries(value).every(([op, operand]) => matchesOperator(slots, op, operand, value));
  });
}

function matchesOperator(slots: PathSlot[], op: string, operand: JsonValue, condition: JsonObject): boolean {
  switch (op) {
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) throw new Error(`matchesFilter: ${op} needs an array`);
      const found = slots.some((slot) =>
        slot === MISSING
          ? operand.includes(null)
          : anyValue(slot, (v) => operand.some((x) => sameScalar(v, x))),
      );
      return op === '$in' ? found : !found;
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const accept = RANGE[op];
      return slots.some((slot) => slot !== MISSING && anyValue(slot, (v) => inRange(v, operand, accept)));
    }
    case '$regex': {
      if (typeof operand !== 'string') throw new Error('matchesFilter: $regex must be a string');
      // `u`: MongoDB's PCRE runs in UTF mode, folding case the Unicode way.
      const regex = new RegExp(operand, `u${condition.$options === 'i' ? 'i' : ''}`);
      return slots.some(
        (slot) => slot !== MISSING && anyValue(slot, (v) => typeof v === 'string' && regex.test(v)),
      );
    }
    case '$options':
      return true;
    case '$exists':
      return slots.some((slot) => slot !== MISSING) === (operand === true);
    default:
      throw new Error(`matchesFilter: unsupported operator ${op}`);
  }
}

/** A leaf array matches when an element does (the array as a whole never equals a scalar). */
function anyValue(slot: Exclude<PathSlot, typeof MISSING>, test: (v: JsonValue) => boolean): boolean {
  return slot instanceof LeafArray ? slot.items.some(test) : test(slot);
}

function sameScalar(value: JsonValue, operand: JsonValue): boolean {
  if (typeof operand === 'object' && operand !== null)
    throw new Error('matchesFilter: $in supports scalars only');
  return value === operand;
}

const RANGE = {
  $gt: (c: number) => c > 0,
  $gte: (c: number) => c >= 0,
  $lt: (c: number) => c < 0,
  $lte: (c: number) => c <= 0,
};

/** Numbers compare with numbers, strings with strings (binary UTF-8 order); nothing else does. */
function inRange(value: JsonValue, operand: JsonValue, accept: (c: number) => boolean): boolean {
  if (typeof value === 'number' && typeof operand === 'number') return accept(value - operand);
  if (typeof value === 'string' && typeof operand === 'string') {
    return accept(Buffer.compare(Buffer.from(value, 'utf8'), Buffer.from(operand, 'utf8')));
  }
  return false;
}
