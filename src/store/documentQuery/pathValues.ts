/**
 * The values MongoDB sees at a dotted path of a document. Filters and sorts walk paths
 * differently in MongoDB, so there are two walks here.
 *
 * `pathSlots`, for filters, follows the matcher (`src/mongo/db/matcher/path.cpp`,
 * BSONElementIterator):
 * - objects are walked field by field; a missing field, or a scalar where an object was needed,
 *   yields one MISSING slot (this is what `{path: null}` matches);
 * - an array met before the last segment is traversed: each object element continues the rest of
 *   the path; other elements yield nothing, so `[]` or `[1, 2]` yield no slot at all;
 * - a numeric segment also picks the array element at that position (`a.0`), besides looking it
 *   up as a field name in object elements;
 * - an array at the last segment yields its elements and then the array itself.
 * The embedded store's SQL (embedded/query/compileFilter.ts) encodes the same rules natively.
 *
 * `sortKeyCandidates`, for sorts, follows index key generation (`btree_key_generator.cpp`), which
 * MongoDB's SortKeyGenerator uses: see that function.
 */
import type { JsonObject, JsonValue } from '../port.js';

export const MISSING: unique symbol = Symbol('missing');

/** An array reached at the last path segment: matched element-wise and as a whole. */
export class LeafArray {
  constructor(readonly items: JsonValue[]) {}
}

/** One value seen at the path: MISSING, a value (positional picks are never expanded), or a leaf array. */
export type PathSlot = JsonValue | LeafArray | typeof MISSING;

export function isPlainObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `segment` can name an array position the way MongoDB reads one ("0", "12", not "01"). */
export function arrayIndexOf(segment: string): number | undefined {
  if (!/^(?:0|[1-9]\d{0,8})$/.test(segment)) return undefined;
  return Number(segment);
}

/** The slots at `segments` of `doc`. */
export function pathSlots(doc: JsonObject, segments: readonly string[]): PathSlot[] {
  return pathSlotsFromFirst(Object.hasOwn(doc, segments[0]!) ? doc[segments[0]!] : undefined, segments);
}

/**
 * The slots at `segments` given only the value of the first segment (`undefined` when the
 * document lacks it): lets SQL hand over one field instead of the whole document.
 */
export function pathSlotsFromFirst(first: JsonValue | undefined, segments: readonly string[]): PathSlot[] {
  const out: PathSlot[] = [];
  if (first === undefined) out.push(MISSING);
  else fromValue(first, segments, 0, out);
  return out;
}

/** `value` was found under `segments[at]`. */
function fromValue(value: JsonValue, segments: readonly string[], at: number, out: PathSlot[]): void {
  if (at === segments.length - 1) {
    out.push(Array.isArray(value) ? new LeafArray(value) : value);
  } else if (Array.isArray(value)) {
    fromArray(value, segments, at + 1, out);
  } else if (isPlainObject(value)) {
    fromObject(value, segments, at + 1, out);
  } else {
    out.push(MISSING);
  }
}

function fromObject(obj: JsonObject, segments: readonly string[], at: number, out: PathSlot[]): void {
  const key = segments[at]!;
  if (Object.hasOwn(obj, key)) fromValue(obj[key]!, segments, at, out);
  else out.push(MISSING);
}

/** An array met before the last segment; `segments[at]` is what applies to its elements. */
function fromArray(array: JsonValue[], segments: readonly string[], at: number, out: PathSlot[]): void {
  const index = arrayIndexOf(segments[at]!);
  const last = at === segments.length - 1;
  array.forEach((element, i) => {
    if (isPlainObject(element)) fromObject(element, segments, at, out);
    if (i !== index) return;
    if (last) out.push(element);
    else if (isPlainObject(element)) fromObject(element, segments, at + 1, out);
    else if (Array.isArray(element)) fromArray(element, segments, at + 1, out);
  });
}

/** The key of an empty array, which sorts below null. */
export const EMPTY_ARRAY: unique symbol = Symbol('emptyArray');

export type SortCandidate = JsonValue | typeof EMPTY_ARRAY;

/**
 * The keys MongoDB generates for one document and one sort path; ascending sorts by the
 * smallest, descending by the largest. Unlike the matcher:
 * - a missing field, a scalar where an object was needed, an empty array before the last segment
 *   and every non-object element of an array before the last segment give a null key;
 * - an array at the last segment gives its elements (nested arrays whole), an empty one a key
 *   below null;
 * - a numeric segment picks that array position when the array has it (the elements' own fields
 *   of that name are not consulted; MongoDB refuses such ambiguous documents), and otherwise
 *   looks the name up in each element like any field.
 * Given only the value of the first segment (`undefined` when missing), like pathSlotsFromFirst.
 */
export function sortKeyCandidates(
  first: JsonValue | undefined,
  segments: readonly string[],
): SortCandidate[] {
  const out: SortCandidate[] = [];
  keysFromValue(first, segments, 1, out);
  return out;
}

/** `value` was found just before `segments[at]` (`undefined`: not found). */
function keysFromValue(
  value: JsonValue | undefined,
  segments: readonly string[],
  at: number,
  out: SortCandidate[],
): void {
  let current = value;
  for (let i = at; ; i++) {
    if (current === undefined) {
      out.push(null);
      return;
    }
    if (Array.isArray(current)) {
      keysFromArray(current, segments, i, out);
      return;
    }
    if (i === segments.length) {
      out.push(current);
      return;
    }
    current =
      isPlainObject(current) && Object.hasOwn(current, segments[i]!) ? current[segments[i]!] : undefined;
  }
}

function keysFromArray(
  array: JsonValue[],
  segments: readonly string[],
  at: number,
  out: SortCandidate[],
): void {
  if (at === segments.length) {
    if (array.length === 0) out.push(EMPTY_ARRAY);
    // One by one: a spread of a stored array of 130,000 elements overflows the call stack.
    else for (const element of array) out.push(element);
    return;
  }
  if (array.length === 0) {
    out.push(null);
    return;
  }
  const index = arrayIndexOf(segments[at]!);
  if (index !== undefined && index < array.length) {
    const picked = array[index]!;
    if (at === segments.length - 1 && Array.isArray(picked)) {
      // A positional pick is not expanded: a nested array is one key.
      out.push(picked.length === 0 ? EMPTY_ARRAY : picked);
    } else {
      keysFromValue(picked, segments, at + 1, out);
    }
    return;
  }
  for (const element of array) {
    if (isPlainObject(element)) keysFromValue(element, segments, at, out);
    else out.push(null);
  }
}
