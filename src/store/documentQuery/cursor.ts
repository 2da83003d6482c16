/**
 * Cursor pagination (`after=<cursor>` from `meta.next`): the cursor holds the sort and the last
 * row's sort key values and `_id`; the next page is the rows strictly after that position in the
 * sort (`FindQuery.after`). The embedded store compares sort keys exactly (compileKeyset); for
 * MongoDB, `positionFilter` expresses it as a keyset condition in the canonical filter. A position, not a count: rows inserted or deleted elsewhere never
 * shift a walk, so no row is skipped or repeated.
 *
 * Sort keys follow MongoDB (see `sortKeyCandidates`): ascending sorts by a document's smallest
 * key, descending by its largest, missing is null. "The key is after k" is written with "some
 * slot is before k" (`below`) as: NOT below(k, strict) AND (NOT below(k, inclusive) OR <later
 * keys>), which holds exactly when the smallest (largest) key is after k, or equal to k and the
 * later keys decide. Cross-type order is MongoDB's: null < numbers < strings < booleans (for the
 * key types a cursor carries).
 *
 * Limits: a cursor carries keys that are null, numbers, strings (at most MAX_KEY_LENGTH
 * characters) or booleans. When a page ends on a row whose key is anything else (an object, a
 * nested or empty array), `meta.next` is null and offset pagination remains. Objects, nested or
 * empty arrays held by *other* rows on a sort field, and arrays of non-objects crossed before the
 * last segment of a dotted sort path, are outside positionFilter's type brackets: on MongoDB such rows may be
 * skipped or repeated by a walk (documented in docs/querying.md).
 */
import { z } from 'zod';
import { invalidQuery } from '../../errors.js';
import type { FindQuery, JsonObject, JsonValue, SortPosition, StoredFilter } from '../port.js';
import { EMPTY_ARRAY, type SortCandidate, sortKeyCandidates } from './pathValues.js';

/** Characters in one string sort key a cursor may carry: a cursor travels in a URL. */
export const MAX_KEY_LENGTH = 1024;
/** Characters in an `after` parameter; a valid cursor is well below this. */
export const MAX_CURSOR_LENGTH = 8192;

type CursorKey = null | number | string | boolean;

const keySchema = z.union([z.null(), z.number(), z.string().max(MAX_KEY_LENGTH), z.boolean()]);
const cursorSchema = z
  .object({
    /** The sort the cursor was made for, `_id` last, as [path, direction] pairs. */
    s: z
      .array(z.tuple([z.string().min(1).max(1024), z.union([z.literal(1), z.literal(-1)])]))
      .min(1)
      .max(6),
    /** The last row's sort key per sort path, `_id` excluded. */
    k: z.array(keySchema).max(5),
    /** The last row's `_id`. */
    id: z.string().min(1).max(1024),
  })
  .strict();

type Cursor = z.infer<typeof cursorSchema>;

/** `meta.next` for a page whose last row is `last` (stored form), or null when it cannot be one. */
export function cursorAfter(last: JsonObject, sort: FindQuery['sort']): string | null {
  const keys: CursorKey[] = [];
  for (const [path, direction] of sort.slice(0, -1)) {
    const key = sortKeyOf(last, path, direction);
    if (key === undefined) return null;
    keys.push(key);
  }
  if (typeof last._id !== 'string') return null;
  const cursor: Cursor = { s: sort.map(([p, d]) => [p, d]), k: keys, id: last._id };
  return Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url');
}

/**
 * The keyset condition for `after`, checked against the request's `sort`: a cursor made for
 * another sort (or tampered with) is 400 `invalid_query`, never a wrong page.
 */
export function keysetFilter(after: string, sort: FindQuery['sort']): StoredFilter {
  return positionFilter(keysetPosition(after, sort), sort);
}

/**
 * The keyset condition of a position (`keysetPosition`) in `sort`, as a canonical filter: what
 * the MongoDB store adds to a cursor page's filter (FindQuery.after).
 */
export function positionFilter(position: SortPosition, sort: FindQuery['sort']): StoredFilter {
  const [, idDirection] = sort.at(-1)!;
  let rest: StoredFilter = { _id: { [idDirection === 1 ? '$gt' : '$lt']: position.id } };
  for (let i = sort.length - 2; i >= 0; i--) {
    const [path, direction] = sort[i]!;
    const key = position.keys[i]!;
    const strict = below(path, direction, key, false);
    const inclusive = below(path, direction, key, true);
    rest = { $and: [{ $nor: [strict] }, { $or: [{ $nor: [inclusive] }, rest] }] };
  }
  return rest;
}

/**
 * The same cursor as a position (keys and `_id`), which a store may seek to (FindQuery.after);
 * checked against `sort` exactly as `keysetFilter` does.
 */
export function keysetPosition(after: string, sort: FindQuery['sort']): SortPosition {
  const cursor = checkedCursor(after, sort);
  return { keys: cursor.k, id: cursor.id };
}

function checkedCursor(after: string, sort: FindQuery['sort']): Cursor {
  const cursor = decodeCursor(after);
  const same =
    cursor.s.length === sort.length &&
    cursor.s.every(([p, d], i) => p === sort[i]![0] && d === sort[i]![1]) &&
    cursor.k.length === sort.length - 1 &&
    sort.at(-1)![0] === '_id';
  if (!same) throw invalidQuery('after', 'this cursor was made for another sort; start again without after');
  // Metadata always has one type, and the embedded store compares it in its column: a key of
  // another type never comes from meta.next.
  const wrongType = sort.slice(0, -1).some(([path], i) => {
    const type = METADATA_KEY_TYPES.get(path);
    return type !== undefined && typeof cursor.k[i] !== type;
  });
  if (wrongType) throw invalidQuery('after', 'not a cursor from meta.next');
  return cursor;
}

/** The type of each metadata sort key (stored paths). */
const METADATA_KEY_TYPES = new Map([
  ['_folio.version', 'number'],
  ['_folio.createdAt', 'string'],
  ['_folio.updatedAt', 'string'],
]);

function decodeCursor(after: string): Cursor {
  const invalid = () => invalidQuery('after', 'not a cursor from meta.next');
  if (after.length === 0 || after.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(after)) {
    throw invalid();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    throw invalid();
  }
  const result = cursorSchema.safeParse(parsed);
  if (!result.success) throw invalid();
  return result.data;
}

// ---------------------------------------------------------------------------------------------
// Keys and type brackets

/** Rank of each key type in MongoDB's cross-type sort order (the types a cursor carries). */
function rank(key: CursorKey): number {
  if (key === null) return 0;
  if (typeof key === 'number') return 1;
  if (typeof key === 'string') return 2;
  return 3;
}

function compareKeys(a: CursorKey, b: CursorKey): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return compareUtf8(a, b);
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  return 0;
}

/** MongoDB and SQLite compare strings by their UTF-8 bytes. */
function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** The document's key for one sort path (smallest ascending, largest descending), if a cursor can carry it. */
function sortKeyOf(doc: JsonObject, path: string, direction: 1 | -1): CursorKey | undefined {
  const segments = path.split('.');
  const first = Object.hasOwn(doc, segments[0]!) ? doc[segments[0]!] : undefined;
  let best: CursorKey | undefined;
  for (const candidate of sortKeyCandidates(first, segments)) {
    if (!isCursorKey(candidate)) return undefined;
    if (best === undefined || compareKeys(candidate, best) * direction < 0) best = candidate;
  }
  return best;
}

function isCursorKey(candidate: SortCandidate): candidate is CursorKey {
  if (candidate === EMPTY_ARRAY) return false;
  if (typeof candidate === 'string') return candidate.length <= MAX_KEY_LENGTH;
  return candidate === null || typeof candidate === 'number' || typeof candidate === 'boolean';
}

/**
 * "Some slot at `path` comes before `key` in the walk's direction" (`inclusive`: or equals it),
 * as a canonical filter: every type bracket before the key's, plus the key's own bracket
 * compared with the key.
 */
function below(path: string, direction: 1 | -1, key: CursorKey, inclusive: boolean): StoredFilter {
  const brackets: Array<{ [op: string]: JsonValue }> = [];
  const own = rank(key);
  for (let r = 0; r <= 3; r++) {
    const before = direction === 1 ? r < own : r > own;
    if (before) brackets.push(...wholeBracket(r));
  }
  brackets.push(...ownBracket(key, direction, inclusive));
  if (brackets.length === 0) return { _id: { $in: [] } };
  const clauses = brackets.map((condition) => ({ [path]: condition }));
  return clauses.length === 1 ? clauses[0]! : { $or: clauses };
}

/** Conditions matching any slot of the type ranked `r`. */
function wholeBracket(r: number): Array<{ [op: string]: JsonValue }> {
  switch (r) {
    case 0:
      return [{ $in: [null] }];
    case 1:
      return [{ $gte: Number.NEGATIVE_INFINITY }];
    case 2:
      return [{ $gte: '' }];
    default:
      return [{ $in: [false, true] }];
  }
}

/** Conditions matching a slot of the key's own type before (or at) the key. */
function ownBracket(
  key: CursorKey,
  direction: 1 | -1,
  inclusive: boolean,
): Array<{ [op: string]: JsonValue }> {
  if (key === null) return inclusive ? [{ $in: [null] }] : [];
  if (typeof key === 'boolean') {
    const values = [false, true].filter((v) => {
      const c = compareKeys(v, key) * direction;
      return inclusive ? c <= 0 : c < 0;
    });
    return values.length === 0 ? [] : [{ $in: values }];
  }
  const op = direction === 1 ? (inclusive ? '$lte' : '$lt') : inclusive ? '$gte' : '$gt';
  return [{ [op]: key }];
}
