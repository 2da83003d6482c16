/**
 * SQL functions the compiled queries call (compileFilter.ts, compileSort.ts). Both are deterministic, so SQLite may
 * evaluate them once per row and order by their results. Filters and sorts on the metadata
 * columns never call them.
 *
 * - `folio_regex(text, pattern, flags)`: MongoDB's `$regex` with `$options` 'i' or ''. MongoDB
 *   runs PCRE in UTF mode, where caseless matching uses Unicode case folding ('É'/'é', 'Σ'/'σ'/'ς',
 *   'ẞ'/'ß'); a JavaScript RegExp with the `u` flag folds the same way.
 * - `folio_sort_key(json, segments, direction)`: a BLOB whose byte order is MongoDB's sort order
 *   for the value at the path (see `sortKey`). Sort indexes store its results, so its bytes are
 *   part of the data file's format (pinned by test/store/sortKeyFormat.test.ts): a new encoding
 *   needs a new name and a migration that rebuilds those indexes.
 */
import type Database from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import { EMPTY_ARRAY, isPlainObject, sortKeyCandidates } from '../../documentQuery/pathValues.js';
import type { JsonValue } from '../../port.js';

export function registerQueryFunctions(db: Database.Database): void {
  const regexes = new LRUCache<string, RegExp>({ max: 256 });
  db.function('folio_regex', { deterministic: true }, (text: unknown, pattern: unknown, flags: unknown) => {
    if (typeof text !== 'string' || typeof pattern !== 'string' || typeof flags !== 'string') return 0;
    const key = `${flags}/${pattern}`;
    let regex = regexes.get(key);
    if (!regex) {
      regex = new RegExp(pattern, `u${flags}`);
      regexes.set(key, regex);
    }
    return regex.test(text) ? 1 : 0;
  });

  const paths = new LRUCache<string, string[]>({ max: 256 });
  db.function(
    'folio_sort_key',
    { deterministic: true },
    (json: unknown, segmentsJson: unknown, direction: unknown) => {
      if (typeof segmentsJson !== 'string') throw new TypeError('folio_sort_key: segments must be JSON text');
      let segments = paths.get(segmentsJson);
      if (!segments) {
        segments = JSON.parse(segmentsJson) as string[];
        paths.set(segmentsJson, segments);
      }
      const first = typeof json === 'string' ? (JSON.parse(json) as JsonValue) : undefined;
      return sortKey(first, segments, direction === -1 ? -1 : 1);
    },
  );
}

// ---------------------------------------------------------------------------------------------
// Sort keys

/** Type ranks in MongoDB's comparison order (MinKey < Null < Numbers < Strings < Object < Array < Boolean). */
const RANK = {
  /** Below null: the key of an empty array, which MongoDB sorts before null and missing. */
  emptyArray: 0x01,
  null: 0x02,
  number: 0x03,
  string: 0x04,
  object: 0x05,
  array: 0x06,
  boolean: 0x07,
} as const;

/**
 * MongoDB's sort key for the path `segments`, given the value of the first segment (`undefined`
 * when missing), as bytes that compare (memcmp) in MongoDB's order: the smallest of the keys
 * MongoDB generates for the document (see `sortKeyCandidates`) when ascending, the largest when
 * descending, as MongoDB does for arrays.
 */
export function sortKey(
  first: JsonValue | undefined,
  segments: readonly string[],
  direction: 1 | -1,
): Buffer {
  let best: Buffer | undefined;
  for (const candidate of sortKeyCandidates(first, segments)) {
    const key = candidate === EMPTY_ARRAY ? EMPTY_ARRAY_KEY : encodeTop(candidate);
    if (best === undefined || Buffer.compare(key, best) * direction < 0) best = key;
  }
  return best ?? NULL_KEY;
}

/**
 * The sort key of one scalar (what a cursor or a filter operand carries), byte for byte the key
 * `sortKey` gives a document holding it: compared with a `folio_sort_key` result, it places
 * that value in MongoDB's order.
 */
export function scalarSortKey(value: null | number | string | boolean): Buffer {
  return encodeTop(value);
}

/** The first key of a type bracket (`numbers`: below every number key; `strings`: the key of ''). */
export const BRACKET_START = {
  number: Buffer.from([RANK.number]),
  string: Buffer.from([RANK.string]),
  object: Buffer.from([RANK.object]),
} as const;

const NULL_KEY = Buffer.from([RANK.null]);
const EMPTY_ARRAY_KEY = Buffer.from([RANK.emptyArray]);

/** A top-level key: nothing follows it, so a string needs no terminator. */
function encodeTop(value: JsonValue): Buffer {
  if (typeof value === 'string')
    return Buffer.concat([Buffer.from([RANK.string]), Buffer.from(value, 'utf8')]);
  const out: number[] = [];
  encodeNested(value, out);
  return Buffer.from(out);
}

function rankOf(value: JsonValue): number {
  if (value === null) return RANK.null;
  if (typeof value === 'number') return RANK.number;
  if (typeof value === 'string') return RANK.string;
  if (typeof value === 'boolean') return RANK.boolean;
  return Array.isArray(value) ? RANK.array : RANK.object;
}

/**
 * Rank byte then payload. Inside objects and arrays strings are escaped (0x00 → 0x00 0xFF) and
 * end with 0x00 0x00, and containers end with 0x00, so a prefix sorts first. Objects compare
 * field by field on (type, name, value), arrays element by element, as BSON comparison does.
 */
function encodeNested(value: JsonValue, out: number[]): void {
  out.push(rankOf(value));
  if (value === null) return;
  if (typeof value === 'number') {
    encodeNumber(value, out);
    return;
  }
  if (typeof value === 'string') {
    encodeString(value, out);
    return;
  }
  if (typeof value === 'boolean') {
    out.push(value ? 1 : 0);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) encodeNested(item, out);
  } else if (isPlainObject(value)) {
    for (const [name, item] of Object.entries(value)) {
      out.push(rankOf(item));
      encodeString(name, out);
      // The rank is already written; encodeNested repeats it, which keeps the code simple and
      // the order intact (equal ranks compare equal).
      encodeNested(item, out);
    }
  }
  out.push(0x00);
}

function encodeString(text: string, out: number[]): void {
  for (const byte of Buffer.from(text, 'utf8')) {
    out.push(byte);
    if (byte === 0x00) out.push(0xff);
  }
  out.push(0x00, 0x00);
}

/** IEEE 754 big-endian with the sign flipped (negatives inverted): byte order = numeric order. */
function encodeNumber(n: number, out: number[]): void {
  const bytes = Buffer.alloc(8);
  bytes.writeDoubleBE(n === 0 ? 0 : n);
  if (bytes[0]! & 0x80) {
    for (let i = 0; i < 8; i++) bytes[i] = ~bytes[i]! & 0xff;
  } else {
    bytes[0] = bytes[0]! | 0x80;
  }
  out.push(...bytes);
}
