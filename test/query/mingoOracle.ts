/**
 * The reference answer for a list query: mingo (an independent implementation of MongoDB's query
 * language) runs the canonical filter, sort, skip and limit. Where mingo is known to disagree with
 * MongoDB, the query handed to mingo is rewritten into a form mingo evaluates the MongoDB way,
 * each rewrite citing the MongoDB behaviour it restores:
 *
 * 1. `$in`/`$nin` → `$or`/`$nor` of `$eq` (MongoDB documents them as equivalent). mingo's `$in`
 *    does not look inside arrays reached through an array of subdocuments (`{a: [{b: [1, 5]}]}`
 *    with `{'a.b': {$in: [1]}}`), while its `$eq` does.
 * 2. `$gt`/`$gte`/`$lt`/`$lte` → also tried on elements one level deeper (`$elemMatch`), for the
 *    same reason: MongoDB compares every element of `[1, 5]` there.
 * 3. Equality with null on a dotted path → evaluated by `dottedNullMatches`, written from
 *    MongoDB's jstests/core/query/null_query_semantics.js ("an array which has at least one
 *    object in it which has a missing, null, or undefined value for 'b'" matches `{'a.b': null}`);
 *    mingo only sees the values present. Numeric segments follow path.cpp (positional pick plus
 *    the field of that name in object elements).
 * 4. `$regex` with `$options: 'i'` → a RegExp with the `u` flag: MongoDB's PCRE runs in UTF mode
 *    with Unicode case folding ('ſ' ~ 's', 'K' (Kelvin) ~ 'k'); mingo compiles without `u`.
 * 5. Sorting: mingo compares whole arrays and puts missing before null; MongoDB sorts by the
 *    smallest (ascending) or largest (descending) index key of the document, treats missing as
 *    null and an empty array as below null (docs: "Comparison/Sort Order"; keys per
 *    btree_key_generator.cpp). The oracle computes those keys (`mongoSortKeys`) into extra fields
 *    and lets mingo sort by them, so mingo still decides the cross-type order and the tie-break.
 *
 * Test data avoids what neither side can express the same way: characters U+E000..U+FFFF (JS
 * compares strings in UTF-16 units, MongoDB and SQLite in UTF-8 bytes; they agree below U+E000
 * and for astral characters) and objects with numeric keys inside arrays (MongoDB refuses to
 * sort those).
 */
import { Query } from 'mingo';
import type { ListQuery } from '../../src/query/listQuery.js';
import type { JsonObject, JsonValue, StoredFilter } from '../../src/store/port.js';

type MingoFilter = Record<string, unknown>;

export interface OracleAnswer {
  ids: string[];
  count: number;
}

export function oracleFind(docs: JsonObject[], q: ListQuery): OracleAnswer {
  const filter = toMingoFilter(q.filter);
  const matched = new Query(filter).find(docs).all() as JsonObject[];
  const withKeys = matched.map((doc) => {
    const extra: JsonObject = {};
    q.sort.forEach(([path, direction], i) => {
      if (path === '_id') return;
      const { belowNull, key } = mongoSortKey(doc, path, direction);
      extra[`__below${i}`] = belowNull ? 0 : 1;
      extra[`__key${i}`] = key;
    });
    return { ...doc, ...extra };
  });
  const sortSpec: Record<string, 1 | -1> = {};
  q.sort.forEach(([path, direction], i) => {
    if (path === '_id') {
      sortSpec._id = direction;
    } else {
      sortSpec[`__below${i}`] = direction;
      sortSpec[`__key${i}`] = direction;
    }
  });
  const page = new Query({})
    .find(withKeys)
    .sort(sortSpec)
    .skip(q.offset)
    .limit(q.limit)
    .all() as JsonObject[];
  return { ids: page.map((d) => d._id as string), count: matched.length };
}

export function toMingoFilter(filter: StoredFilter): MingoFilter {
  const clauses: MingoFilter[] = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and') {
      clauses.push({ $and: (value as StoredFilter[]).map(toMingoFilter) });
      continue;
    }
    if (key === '$or' || key === '$nor') {
      clauses.push({ [key]: (value as StoredFilter[]).map(toMingoFilter) });
      continue;
    }
    const condition = value as JsonObject;
    for (const [op, operand] of Object.entries(condition)) {
      clauses.push(rewrite(key, op, operand, condition));
    }
  }
  return clauses.length === 1 ? clauses[0]! : { $and: clauses };
}

function rewrite(path: string, op: string, operand: JsonValue, condition: JsonObject): MingoFilter {
  switch (op) {
    case '$in':
    case '$nin': {
      const alternatives = (operand as JsonValue[]).map((v) =>
        v === null && path.includes('.') ? dottedNull(path) : { [path]: { $eq: v } },
      );
      return { [op === '$in' ? '$or' : '$nor']: alternatives };
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return { $or: [{ [path]: { [op]: operand } }, { [path]: { $elemMatch: { [op]: operand } } }] };
    case '$regex':
      return { [path]: { $regex: new RegExp(operand as string, `u${condition.$options ?? ''}`) } };
    case '$options':
      return {};
    default:
      return { [path]: { [op]: operand } };
  }
}

function dottedNull(path: string): MingoFilter {
  const segments = path.split('.');
  return {
    $where(this: JsonObject) {
      return dottedNullMatches(this, segments);
    },
  };
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Whether MongoDB's `{path: null}` matches: some traversal branch ends missing or at null. */
export function dottedNullMatches(doc: JsonObject, segments: string[]): boolean {
  return matcherValues(doc, segments).some(
    (v) => v === undefined || v === null || (Array.isArray(v) && v.includes(null)),
  );
}

/**
 * The values MongoDB's matcher iterates for a path (undefined = missing), leaf arrays unexpanded.
 * From path.cpp: walk objects up to an array; in an array, object elements continue the rest of
 * the path, and a numeric segment also picks the element at that position.
 */
function matcherValues(obj: JsonObject, segments: string[]): Array<JsonValue | undefined> {
  let current: JsonValue = obj;
  for (let i = 0; i < segments.length; i++) {
    if (!isObject(current) || !Object.hasOwn(current, segments[i]!)) return [undefined];
    current = current[segments[i]!]!;
    if (Array.isArray(current) && i < segments.length - 1) return inArray(current, segments.slice(i + 1));
  }
  return [current];
}

function inArray(array: JsonValue[], rest: string[]): Array<JsonValue | undefined> {
  const out: Array<JsonValue | undefined> = [];
  array.forEach((element, k) => {
    if (isObject(element)) out.push(...matcherValues(element, rest));
    if (rest[0] !== String(k)) return;
    if (rest.length === 1) out.push(element);
    else if (isObject(element)) out.push(...matcherValues(element, rest.slice(1)));
    else if (Array.isArray(element)) out.push(...inArray(element, rest.slice(1)));
  });
  return out;
}

const EMPTY = Symbol('empty array');

/** MongoDB's sort key of one document for one path: the min (asc) or max (desc) index key. */
function mongoSortKey(
  doc: JsonObject,
  path: string,
  direction: 1 | -1,
): { belowNull: boolean; key: JsonValue } {
  const keys = indexKeys(doc, path.split('.'));
  const rank = (k: JsonValue | typeof EMPTY) => (k === EMPTY ? 0 : 1);
  let best: JsonValue | typeof EMPTY = keys[0]!;
  for (const k of keys.slice(1)) {
    const c = rank(k) - rank(best) || (k !== EMPTY && best !== EMPTY ? bsonCompare(k, best) : 0);
    if (c * direction < 0) best = k;
  }
  return best === EMPTY ? { belowNull: true, key: null } : { belowNull: false, key: best };
}

/** Index keys per btree_key_generator.cpp for a single-field pattern (no parallel arrays). */
function indexKeys(doc: JsonObject, segments: string[]): Array<JsonValue | typeof EMPTY> {
  const keys: Array<JsonValue | typeof EMPTY> = [];
  const fromObject = (obj: JsonObject, rest: string[]): void => {
    let current: JsonValue | undefined = obj;
    for (let i = 0; i < rest.length; i++) {
      current = isObject(current) && Object.hasOwn(current, rest[i]!) ? current[rest[i]!] : undefined;
      if (current === undefined) {
        keys.push(null);
        return;
      }
      if (Array.isArray(current)) {
        fromArray(current, rest.slice(i + 1));
        return;
      }
    }
    keys.push(current!);
  };
  const fromArray = (array: JsonValue[], rest: string[]): void => {
    if (rest.length === 0) {
      if (array.length === 0) keys.push(EMPTY);
      else keys.push(...array);
      return;
    }
    if (array.length === 0) {
      keys.push(null);
      return;
    }
    const index = /^(0|[1-9]\d*)$/.test(rest[0]!) ? Number(rest[0]) : -1;
    if (index >= 0 && index < array.length) {
      const picked = array[index]!;
      if (rest.length === 1) keys.push(Array.isArray(picked) && picked.length === 0 ? EMPTY : picked);
      else if (Array.isArray(picked)) fromArray(picked, rest.slice(1));
      else if (isObject(picked)) fromObject(picked, rest.slice(1));
      else keys.push(null);
      return;
    }
    for (const element of array) {
      if (isObject(element)) fromObject(element, rest);
      else keys.push(null);
    }
  };
  fromObject(doc, segments);
  return keys;
}

/** Cross-type order for the scalar keys the generator makes: null < numbers < strings < booleans. */
function bsonCompare(a: JsonValue, b: JsonValue): number {
  const order = (v: JsonValue) =>
    v === null
      ? 0
      : typeof v === 'number'
        ? 1
        : typeof v === 'string'
          ? 2
          : Array.isArray(v)
            ? 4
            : typeof v === 'object'
              ? 3
              : 5;
  const d = order(a) - order(b);
  if (d !== 0) return d;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  if (a === null) return 0;
  throw new Error('oracle: sort keys are scalars in these tests');
}
