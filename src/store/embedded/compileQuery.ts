/**
 * The canonical MongoDB filter and sort (the subset `src/query/` generates) → SQL over the
 * `documents` table (alias `d`), with MongoDB's semantics.
 *
 * - `_id`, `_folio.version`, `_folio.createdAt` and `_folio.updatedAt` compile to the `id`,
 *   `version`, `created_at` and `updated_at` columns, so the primary key and the
 *   (scope, collection, <column>, id) indexes serve filters and sorts on them. Those values are
 *   always present and of one type, which keeps the column forms exact: `$version` never equals
 *   a string, `_id` never compares with a number.
 * - Any other path reads `d.body` with SQLite's JSON functions, following MongoDB's path
 *   traversal (see `src/query/pathValues.ts`): arrays before the last segment are traversed into
 *   their object elements, numeric segments also pick array positions, an array at the end
 *   matches when any element does, and a missing field matches `null`. Type brackets are kept:
 *   numbers compare only with numbers, strings only with strings (binary UTF-8 order, like
 *   MongoDB's default collation).
 * - Every value and every JSON path is a bound parameter. Field names go into JSON paths as
 *   double-quoted labels escaped like JSON strings, which SQLite reads back exactly, so no field
 *   name can change the shape of a path or of the SQL. The SQL text depends only on the shape of
 *   the query, which keeps prepared statements reusable.
 */
import { BoundedCache } from '../../boundedCache.js';
import { MAX_NUMERIC_SEGMENTS } from '../documentQuery/fieldPath.js';
import { arrayIndexOf } from '../documentQuery/pathValues.js';
import type { FindQuery, JsonValue, SortPosition, StoredFilter } from '../port.js';
import { ARRAY_MARKER, indexKeySql, sortKeySql } from './indexKeys.js';
import { BRACKET_START, scalarSortKey } from './queryFunctions.js';

export type SqlParam = string | number | bigint | Buffer | null;
export interface CompiledSql {
  sql: string;
  params: SqlParam[];
}

/**
 * The stored paths that live in their own indexed columns. A Map: paths are the client's, and
 * `constructor` or `hasOwnProperty` looked up in a plain object would find Object.prototype's.
 */
const COLUMNS = new Map<string, { sql: string; type: 'text' | 'integer' }>([
  ['_id', { sql: 'd.id', type: 'text' }],
  ['_folio.version', { sql: 'd.version', type: 'integer' }],
  ['_folio.createdAt', { sql: 'd.created_at', type: 'text' }],
  ['_folio.updatedAt', { sql: 'd.updated_at', type: 'text' }],
]);

/**
 * A `WHERE` condition equivalent to the MongoDB filter; always evaluates to 0 or 1. For the
 * top-level paths in `indexed` (declared indexes, see declaredIndexes.ts), each condition is
 * ANDed with a sargable form the planner can answer from the expression indexes (see
 * `indexedForm`); that form holds for every match, so the answer never changes. For the paths
 * in `arrayFree` (indexed, and holding no array in the collection: see
 * `EmbeddedIndexes.arrayFree`), equality and ranges also get an exact form over the sort index
 * (`sortKeyForms`), which a sorted page can seek and walk in one index.
 *
 * `collection`: the query's own condition on its collection when it names it by literals (the
 * declared indexes are partial, see declaredIndexes.ts). A sargable form that is an OR repeats
 * it in each branch: SQLite plans each branch of an OR alone, and uses a partial index there
 * only if that branch implies the index's condition.
 */
export function compileFilter(
  filter: StoredFilter,
  indexed: ReadonlySet<string> = NO_INDEXES,
  arrayFree: ReadonlySet<string> = NO_INDEXES,
  collection: string | null = null,
): CompiledSql {
  return new FilterCompiler(indexed, arrayFree, collection).document(filter);
}

const NO_INDEXES: ReadonlySet<string> = new Set();

/** A filter's compilation, with what it was compiled against (see `compileFilterOnce`). */
interface Compiled {
  collection: string | null;
  /** The paths the filter names, with whether each was indexed and array-free then (bit 1, 2). */
  paths: string[];
  flags: number[];
  where: CompiledSql;
}

/** Compilations by filter text (`filterText`) and collection; all forgotten past this many. */
export const MAX_CACHED_FILTERS = 1000;
/** A longer filter text is compiled every time: the cache holds no client's megabyte. */
export const MAX_CACHED_FILTER_CHARS = 2000;

const byObject = new WeakMap<StoredFilter, Compiled>();
const byText = new BoundedCache<Compiled>(MAX_CACHED_FILTERS);

/**
 * `compileFilter`, remembered: by the filter object (a list page and the count behind its
 * total compile the same filter in one request), then by the filter's text and collection
 * (the same query asked again, as a list page or a count is; compiling `filter[category]=…`
 * over a declared index takes about 5 µs, much of a count's own work). A filter is a JSON value
 * its parser builds and nothing changes afterwards, so an object stands for its content. The
 * SQL depends on `indexed` and `arrayFree` only through the paths the filter names, so a reuse
 * checks those paths, not the whole sets: the page and the count ask about different paths
 * (the sort's), and the compilation still holds; one that no longer fits is compiled again.
 */
export function compileFilterOnce(
  filter: StoredFilter,
  indexed: ReadonlySet<string>,
  arrayFree: ReadonlySet<string>,
  collection: string | null,
): CompiledSql {
  const mine = byObject.get(filter);
  if (mine && fits(mine, collection, indexed, arrayFree)) return mine.where;
  const text = `${collection ?? ''}\0${filterText(filter)}`;
  let known = byText.get(text);
  if (!known || !fits(known, collection, indexed, arrayFree)) {
    const where = compileFilter(filter, indexed, arrayFree, collection);
    const paths = [...pathsNamed(filter)];
    const flags = paths.map((path) => flagsOf(path, indexed, arrayFree));
    known = { collection, paths, flags, where };
    if (text.length <= MAX_CACHED_FILTER_CHARS) byText.set(text, known);
  }
  byObject.set(filter, known);
  return known.where;
}

/**
 * The filter as text that tells any two filters apart: each value is tagged with its type (`5`
 * and `"5"` differ), and what JSON would lose is spelled out (`-0`, `Infinity`, `NaN`, an
 * undefined member), so no two filters that compile differently share a text. Members in the
 * order `Object.entries` gives them, which is the order the compiler reads them in.
 */
export function filterText(filter: StoredFilter): string {
  // Once per filter object: a list page, the count behind its total and their cached answers
  // (queryCache.ts) all ask for it.
  let text = textByObject.get(filter);
  if (text === undefined) {
    const before = uncacheable;
    text = textOf(filter);
    // A value that is not JSON gets a text of its own at every call: never kept, never reused.
    if (uncacheable === before) textByObject.set(filter, text);
  }
  return text;
}

/** Any value as filterText spells it (a sort position's keys, for a page's cached answer). */
export function valueText(value: unknown): string {
  return textOf(value);
}

const textByObject = new WeakMap<StoredFilter, string>();

let uncacheable = 0;

/** Recursive: a filter is as deep as the parser builds it (a few levels), never a client's nesting. */
function textOf(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return `s${JSON.stringify(value)}`;
    case 'number':
      return `n${Object.is(value, -0) ? '-0' : String(value)}`;
    case 'boolean':
      return value ? 't' : 'f';
    case 'undefined':
      return 'u';
    case 'object': {
      if (value === null) return 'z';
      let text: string;
      if (Array.isArray(value)) {
        text = '[';
        for (const item of value) text += `${textOf(item)},`;
        return `${text}]`;
      }
      text = '{';
      for (const key in value) {
        if (Object.hasOwn(value, key))
          text += `${JSON.stringify(key)}:${textOf((value as Record<string, unknown>)[key])},`;
      }
      return `${text}}`;
    }
    default:
      // Not JSON (a function, a symbol, a bigint; compileFilter refuses them): a text no other
      // filter gets.
      uncacheable += 1;
      return `?${uncacheable}`;
  }
}

function fits(
  known: Compiled,
  collection: string | null,
  indexed: ReadonlySet<string>,
  arrayFree: ReadonlySet<string>,
): boolean {
  return known.collection === collection && sameFlags(known, indexed, arrayFree);
}

function flagsOf(path: string, indexed: ReadonlySet<string>, arrayFree: ReadonlySet<string>): number {
  return (indexed.has(path) ? 1 : 0) | (arrayFree.has(path) ? 2 : 0);
}

function sameFlags(known: Compiled, indexed: ReadonlySet<string>, arrayFree: ReadonlySet<string>): boolean {
  for (let i = 0; i < known.paths.length; i++) {
    if (flagsOf(known.paths[i]!, indexed, arrayFree) !== known.flags[i]) return false;
  }
  return true;
}

/** Every field name the filter uses, under `$and`, `$or` and `$nor` too (explicit stack). */
function pathsNamed(filter: StoredFilter): Set<string> {
  const found = new Set<string>();
  const stack: JsonValue[] = [filter];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (key === '$and' || key === '$or' || key === '$nor') stack.push(value);
      else if (!key.startsWith('$')) found.add(key);
    }
  }
  return found;
}

/**
 * An `ORDER BY` list in MongoDB's order (BSON type order, arrays by their min/max element).
 * A key the declared sort index orders exactly (`sortExpression`) is written as that index's
 * expression, so the planner walks the index instead of sorting the matches.
 */
export function compileSort(
  sort: FindQuery['sort'],
  indexed: ReadonlySet<string> = NO_INDEXES,
  arrayFree: ReadonlySet<string> = NO_INDEXES,
): CompiledSql {
  if (sort.length === 0) throw new Error('compileSort needs at least one key');
  return join(
    sort.map(([path, direction]) => {
      if (direction !== 1 && direction !== -1) throw new Error(`bad sort direction ${String(direction)}`);
      return sql`${sortExpression(path, direction, indexed, arrayFree)} ${raw(direction === 1 ? 'ASC' : 'DESC')}`;
    }),
    ', ',
  );
}

/**
 * The rows strictly after `position` in `sort` (a cursor page), over the very expressions
 * `compileSort` orders by, so the condition is exact (MongoDB's order, whatever the types) and
 * its leading bound lets the planner seek into the sort index instead of walking up to the
 * position: `k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND (k2 > v2 OR …)))` (`<` when descending).
 * SQLite does not bound an index by a row value over expressions, hence the expansion.
 */
export function compileKeyset(
  sort: FindQuery['sort'],
  position: SortPosition,
  indexed: ReadonlySet<string> = NO_INDEXES,
  arrayFree: ReadonlySet<string> = NO_INDEXES,
): CompiledSql {
  if (sort.length === 0 || sort.at(-1)![0] !== '_id' || position.keys.length !== sort.length - 1) {
    throw new Error('compileKeyset: the position does not fit the sort');
  }
  const terms = sort.map(([path, direction], i) => {
    const key = path === '_id' ? position.id : position.keys[i]!;
    const column = COLUMNS.get(path);
    let value: CompiledSql;
    if (column) {
      if (typeof key !== (column.type === 'text' ? 'string' : 'number')) {
        // A metadata value is always of its column's type; another type is a forged cursor.
        throw new Error(`compileKeyset: a ${column.type} key is needed for ${path}`);
      }
      value = param(key as string | number);
    } else {
      value = param(scalarSortKey(key));
    }
    return { expr: sortExpression(path, direction, indexed, arrayFree), value, direction };
  });
  // Iterative from the last key, so the nesting is built without recursion.
  let after: CompiledSql | undefined;
  for (let i = terms.length - 1; i >= 0; i--) {
    const { expr, value, direction } = terms[i]!;
    const strict = sql`${expr} ${raw(direction === 1 ? '>' : '<')} ${value}`;
    after = after === undefined ? strict : sql`(${strict} OR (${expr} = ${value} AND ${after}))`;
  }
  const first = terms[0]!;
  if (terms.length === 1) return after!;
  return sql`${first.expr} ${raw(first.direction === 1 ? '>=' : '<=')} ${first.value} AND ${after!}`;
}

/**
 * The SQL sort key of one path: the metadata column; the declared sort index's expression
 * when it gives MongoDB's order for this direction (always ascending — the index holds the
 * ascending key; descending only while the path holds no array, when both keys are equal);
 * otherwise `folio_sort_key` for the direction, with the path bound as parameters.
 */
function sortExpression(
  path: string,
  direction: 1 | -1,
  indexed: ReadonlySet<string>,
  arrayFree: ReadonlySet<string>,
): CompiledSql {
  const column = COLUMNS.get(path);
  if (column) return raw(column.sql);
  if (indexed.has(path) && (direction === 1 || arrayFree.has(path))) return raw(sortKeySql(path, 'd.body'));
  const segments = path.split('.');
  // The function gets only the first field's JSON (`->`), not the whole document.
  return sql`folio_sort_key(d.body -> ${param(`$${label(segments[0]!)}`)}, ${param(JSON.stringify(segments))}, ${param(direction)})`;
}

// ---------------------------------------------------------------------------------------------
// SQL fragments

function raw(text: string): CompiledSql {
  return { sql: text, params: [] };
}

function param(value: SqlParam): CompiledSql {
  return { sql: '?', params: [value] };
}

/** Template literal whose holes are fragments, so text and parameters stay in step. */
function sql(strings: TemplateStringsArray, ...parts: CompiledSql[]): CompiledSql {
  let text = strings[0]!;
  const params: SqlParam[] = [];
  parts.forEach((part, i) => {
    text += part.sql + strings[i + 1]!;
    params.push(...part.params);
  });
  return { sql: text, params };
}

function join(parts: CompiledSql[], separator: string): CompiledSql {
  return { sql: parts.map((p) => p.sql).join(separator), params: parts.flatMap((p) => p.params) };
}

/** A condition that may be known at compile time. */
type Cond = CompiledSql | boolean;

const TRUE = raw('1');
const FALSE = raw('0');

function toSql(cond: Cond): CompiledSql {
  return cond === true ? TRUE : cond === false ? FALSE : cond;
}

function and(conds: Cond[]): Cond {
  if (conds.includes(false)) return false;
  const rest = conds.filter((c): c is CompiledSql => c !== true);
  if (rest.length === 0) return true;
  if (rest.length === 1) return rest[0]!;
  return sql`(${join(rest, ' AND ')})`;
}

function or(conds: Cond[]): Cond {
  if (conds.includes(true)) return true;
  const rest = conds.filter((c): c is CompiledSql => c !== false);
  if (rest.length === 0) return false;
  if (rest.length === 1) return rest[0]!;
  return sql`(${join(rest, ' OR ')})`;
}

function not(cond: Cond): Cond {
  return typeof cond === 'boolean' ? !cond : sql`NOT ${cond}`;
}

/** `"seg"` as a JSON path step; SQLite decodes JSON string escapes in quoted labels. */
function label(segment: string): string {
  return `.${JSON.stringify(segment)}`;
}

// ---------------------------------------------------------------------------------------------
// Value tests: what one operator asks of one value seen at the path

/** SQLite's `json_type` names for scalars. */
type ScalarType = 'null' | 'true' | 'false' | 'integer' | 'real' | 'text';
const SCALAR_TYPES: ScalarType[] = ['null', 'true', 'false', 'integer', 'real', 'text'];

interface ValueTest {
  /** Whether a MISSING slot satisfies the test (`$in` holding null). */
  missing: boolean;
  /** Whether any present value (object, array, scalar) satisfies it (`$exists`). */
  anyPresent: boolean;
  /** The condition on a scalar of `type` whose SQL value is `value`. */
  scalar(type: ScalarType, value: CompiledSql): Cond;
}

function inTest(values: JsonValue[]): ValueTest {
  const strings: string[] = [];
  const numbers: number[] = [];
  const flags = { null: false, true: false, false: false };
  for (const v of values) {
    if (typeof v === 'string') strings.push(v);
    else if (typeof v === 'number') numbers.push(v);
    else if (v === null) flags.null = true;
    else if (v === true) flags.true = true;
    else if (v === false) flags.false = true;
    // Arrays and objects in `$in` would match whole arrays/subdocuments; the translator never
    // generates them, and silently ignoring one would give wrong answers.
    else throw new Error('compileFilter: $in supports scalar values only');
  }
  const member = (value: CompiledSql, list: SqlParam[]): Cond =>
    list.length === 0 ? false : sql`${value} IN (${join(list.map(param), ', ')})`;
  return {
    missing: flags.null,
    anyPresent: false,
    scalar(type, value) {
      switch (type) {
        case 'text':
          return member(value, strings);
        case 'integer':
        case 'real':
          return member(value, numbers);
        default:
          return flags[type];
      }
    },
  };
}

const RANGE_OPERATORS = new Map([
  ['$gt', '>'],
  ['$gte', '>='],
  ['$lt', '<'],
  ['$lte', '<='],
]);

function rangeTest(operator: string, operand: JsonValue): ValueTest {
  const symbol = RANGE_OPERATORS.get(operator);
  if (symbol === undefined) throw new Error(`compileFilter: unsupported operator ${operator}`);
  let bracket: ScalarType[];
  if (typeof operand === 'number') bracket = ['integer', 'real'];
  else if (typeof operand === 'string') bracket = ['text'];
  else throw new Error(`compileFilter: ${operator} supports a number or a string only`);
  return {
    missing: false,
    anyPresent: false,
    scalar: (type, value) => bracket.includes(type) && sql`${value} ${raw(symbol)} ${param(operand)}`,
  };
}

function regexTest(pattern: JsonValue, options: JsonValue | undefined): ValueTest {
  if (typeof pattern !== 'string') throw new Error('compileFilter: $regex must be a string');
  const flags = options ?? '';
  if (flags !== '' && flags !== 'i') throw new Error("compileFilter: $options may only be 'i'");
  return {
    missing: false,
    anyPresent: false,
    scalar: (type, value) =>
      type === 'text' && sql`folio_regex(${value}, ${param(pattern)}, ${param(flags)})`,
  };
}

const EXISTS_TEST: ValueTest = { missing: false, anyPresent: true, scalar: () => true };

// ---------------------------------------------------------------------------------------------
// Filter compilation

/**
 * A JSON value: inside `base` (SQL giving JSON text) at `path` (SQL giving a JSON path; bound
 * parameters, possibly concatenated with a column of an enclosing subquery).
 */
interface Location {
  base: CompiledSql;
  path: CompiledSql;
}

class FilterCompiler {
  /** Numbers correlated `json_each` aliases so nested subqueries never shadow each other. */
  #aliases = 0;

  constructor(
    private readonly indexed: ReadonlySet<string>,
    private readonly arrayFree: ReadonlySet<string>,
    private readonly collection: string | null,
  ) {}

  /**
   * The whole filter: its exact condition, ANDed with the sargable forms of the indexed paths
   * it constrains at the top level (directly or through `$and`, merged per path so two bounds
   * given separately still make one range). Forms inside `$or`/`$nor` would not help the
   * planner, so there are none.
   */
  document(filter: StoredFilter): CompiledSql {
    // Top-level paths the sort key answers exactly: their JSON condition is left out, so the
    // index alone decides (a count reads no document, a page only its own rows).
    const covered = this.#sortKeyExact(filter);
    const exact =
      covered.size === 0
        ? this.#document(filter)
        : this.#document(Object.fromEntries(Object.entries(filter).filter(([key]) => !covered.has(key))));
    const merged = new Map<string, Array<[string, JsonValue]>>();
    const stack: JsonValue[] = [filter];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (typeof node !== 'object' || node === null || Array.isArray(node)) continue;
      for (const [key, value] of Object.entries(node)) {
        if (key === '$and' && Array.isArray(value)) stack.push(...value);
        else if (
          this.indexed.has(key) &&
          !COLUMNS.has(key) &&
          typeof value === 'object' &&
          value !== null &&
          !Array.isArray(value)
        ) {
          const conditions = merged.get(key) ?? [];
          conditions.push(...Object.entries(value));
          merged.set(key, conditions);
        }
      }
    }
    const forms: Cond[] = [];
    for (const [path, conditions] of merged) forms.push(...this.#forms(path, conditions));
    return toSql(and([exact, ...forms]));
  }

  /**
   * The top-level paths of `filter` whose conditions `sortKeyForms` states exactly: indexed,
   * holding no array in the collection now (one value per document, whose sort key places it in
   * MongoDB's order), and constrained only by `in` over scalars and by number or string bounds.
   */
  #sortKeyExact(filter: StoredFilter): ReadonlySet<string> {
    const covered = new Set<string>();
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) return covered;
    for (const [path, value] of Object.entries(filter)) {
      if (!this.arrayFree.has(path) || COLUMNS.has(path)) continue;
      if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
      const conditions = Object.entries(value);
      if (
        conditions.length > 0 &&
        conditions.every(([operator, operand]) => sortKeyStates(operator, operand))
      ) {
        covered.add(path);
      }
    }
    return covered;
  }

  /** Sargable forms of one indexed path's conditions (each holds for every match). */
  #forms(path: string, conditions: Array<[string, JsonValue]>): CompiledSql[] {
    const forms: CompiledSql[] = [];
    if (this.arrayFree.has(path)) {
      // The sort key's forms state `in` and bounds exactly, one index for all of them; the
      // value keys' forms would only add work per row. Other operators keep theirs.
      forms.push(...sortKeyForms(path, conditions));
      for (const [operator, operand] of conditions) {
        if (sortKeyStates(operator, operand)) continue;
        const form = indexedForm(path, operator, operand);
        if (form) forms.push(form);
      }
      return forms;
    }
    // Two bounds of one type: one index range (`rangeForm`) rather than one bound per index.
    const range = boundsOf(conditions);
    for (const [operator, operand] of conditions) {
      if (range && RANGE_OPERATORS.has(operator)) continue;
      const form = indexedForm(path, operator, operand);
      if (form) forms.push(form);
    }
    if (range) forms.push(rangeForm(path, range, this.collection));
    return forms;
  }

  #document(filter: StoredFilter): CompiledSql {
    if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) {
      throw new Error('compileFilter: a filter must be an object');
    }
    return toSql(
      and(
        Object.entries(filter).map(([key, value]) => {
          if (key === '$and') {
            if (!Array.isArray(value) || value.length === 0) {
              throw new Error('compileFilter: $and needs a non-empty array');
            }
            return and(value.map((sub) => this.#document(sub as StoredFilter)));
          }
          // `$or` and `$nor` come only from cursor keysets (src/query/cursor.ts).
          if (key === '$or' || key === '$nor') {
            if (!Array.isArray(value) || value.length === 0) {
              throw new Error(`compileFilter: ${key} needs a non-empty array`);
            }
            const any = or(value.map((sub) => this.#document(sub as StoredFilter)));
            return key === '$or' ? any : not(any);
          }
          if (key.startsWith('$')) throw new Error(`compileFilter: unsupported operator ${key}`);
          return this.#field(key, value);
        }),
      ),
    );
  }

  #field(path: string, condition: JsonValue): Cond {
    if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) {
      throw new Error(
        `compileFilter: '${path}' needs an operator object (implicit equality is not supported)`,
      );
    }
    const conds: Cond[] = [];
    for (const [operator, operand] of Object.entries(condition)) {
      switch (operator) {
        case '$in':
        case '$nin': {
          if (!Array.isArray(operand)) throw new Error(`compileFilter: ${operator} needs an array`);
          const matched = this.#anySlot(path, inTest(operand));
          conds.push(operator === '$in' ? matched : not(matched));
          break;
        }
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte':
          conds.push(this.#anySlot(path, rangeTest(operator, operand)));
          break;
        case '$regex':
          conds.push(this.#anySlot(path, regexTest(operand, condition.$options)));
          break;
        case '$options':
          if (!Object.hasOwn(condition, '$regex')) throw new Error('compileFilter: $options without $regex');
          break;
        case '$exists': {
          if (typeof operand !== 'boolean') throw new Error('compileFilter: $exists needs true or false');
          const present = this.#anySlot(path, EXISTS_TEST);
          conds.push(operand ? present : not(present));
          break;
        }
        default:
          throw new Error(`compileFilter: unsupported operator ${operator}`);
      }
    }
    return and(conds);
  }

  /** Whether some slot MongoDB sees at `path` satisfies `test`. */
  #anySlot(path: string, test: ValueTest): Cond {
    const column = COLUMNS.get(path);
    if (column) return test.anyPresent || test.scalar(column.type, raw(column.sql));
    const segments = path.split('.');
    if (segments.some((s) => s.length === 0)) throw new Error(`compileFilter: bad path '${path}'`);
    if (segments.filter((s) => arrayIndexOf(s) !== undefined).length > MAX_NUMERIC_SEGMENTS) {
      throw new Error(`compileFilter: more than ${MAX_NUMERIC_SEGMENTS} numeric segments in '${path}'`);
    }
    return this.#valueAt({ base: raw('d.body'), path: param(`$${label(segments[0]!)}`) }, segments, 0, test);
  }

  /**
   * The value (possibly missing) found for `segments[at]` at `loc`. Before the last segment, an
   * object and the object elements of an array are both "containers" to look the next segment up
   * in; one row source enumerates them, so the rest of the path is compiled once per level.
   */
  #valueAt(loc: Location, segments: string[], at: number, test: ValueTest): Cond {
    if (at === segments.length - 1) return this.#leaf(loc, test);
    const containers = sql`SELECT ${loc.base} AS b, ${loc.path} AS p WHERE ${jsonType(loc)} = 'object'
      UNION ALL ${this.#objectElements(loc, jsonType(loc))}`;
    return or([
      this.#lookup(containers, segments, at + 1, test),
      this.#positional(loc, segments, at + 1, test),
      // A missing field, or a scalar where the path needs an object, is one MISSING slot.
      test.missing &&
        caseOf(
          jsonType(loc),
          [
            ['object', false],
            ['array', false],
          ],
          true,
        ),
    ]);
  }

  /** The array at `loc`, with `segments[at]` applying to its elements. */
  #inArray(loc: Location, segments: string[], at: number, test: ValueTest): Cond {
    return or([
      this.#lookup(this.#objectElements(loc, null), segments, at, test),
      this.#positional(loc, segments, at, test),
    ]);
  }

  /** `SELECT b, p` rows for the object elements of the array at `loc` (when `type` says array). */
  #objectElements(loc: Location, type: CompiledSql | null): CompiledSql {
    const e = raw(`e${++this.#aliases}`);
    const guard = type ? sql`${type} = 'array' AND ` : raw('');
    return sql`SELECT ${e}.value AS b, '$' AS p FROM json_each(${loc.base}, ${loc.path}) AS ${e} WHERE ${guard}${e}.type = 'object'`;
  }

  /** Whether some container row (`b`, `p`: an object) yields a matching slot for `segments[at]`. */
  #lookup(containers: CompiledSql, segments: string[], at: number, test: ValueTest): Cond {
    const c = raw(`c${++this.#aliases}`);
    const field: Location = { base: sql`${c}.b`, path: sql`${c}.p || ${param(label(segments[at]!))}` };
    const found = this.#valueAt(field, segments, at, test);
    return found !== false && sql`EXISTS (SELECT 1 FROM (${containers}) AS ${c} WHERE ${toSql(found)})`;
  }

  /** When `segments[at]` is a number and the value at `loc` an array: the element at that position. */
  #positional(loc: Location, segments: string[], at: number, test: ValueTest): Cond {
    const index = arrayIndexOf(segments[at]!);
    if (index === undefined) return false;
    const picked: Location = { base: loc.base, path: sql`${loc.path} || ${param(`[${index}]`)}` };
    let cond: Cond;
    if (at === segments.length - 1) {
      // The picked element itself, not expanded even if it is an array; absent → nothing.
      cond = caseOf(
        jsonType(picked),
        [
          ...SCALAR_TYPES.map((t): [string, Cond] => [t, test.scalar(t, jsonExtract(picked))]),
          ['object', test.anyPresent],
          ['array', test.anyPresent],
        ],
        false,
      );
    } else {
      const next: Location = {
        base: picked.base,
        path: sql`${picked.path} || ${param(label(segments[at + 1]!))}`,
      };
      cond = caseOf(
        jsonType(picked),
        [
          ['object', this.#valueAt(next, segments, at + 1, test)],
          ['array', this.#inArray(picked, segments, at + 1, test)],
        ],
        false,
      );
    }
    return cond !== false && and([sql`${jsonType(loc)} = 'array'`, cond]);
  }

  /** The value at the last segment: an array matches by any element. */
  #leaf(loc: Location, test: ValueTest): Cond {
    if (test.anyPresent) return sql`(${jsonType(loc)} IS NOT NULL)`;
    const e = `e${++this.#aliases}`;
    const elementCond = caseOf(
      raw(`${e}.type`),
      SCALAR_TYPES.map((t) => [t, test.scalar(t, raw(`${e}.atom`))]),
      false,
    );
    const anyElement =
      elementCond === false
        ? false
        : sql`EXISTS (SELECT 1 FROM json_each(${loc.base}, ${loc.path}) AS ${raw(e)} WHERE ${toSql(elementCond)})`;
    return caseOf(
      jsonType(loc),
      [
        ...SCALAR_TYPES.map((t): [string, Cond] => [t, test.scalar(t, jsonExtract(loc))]),
        ['array', anyElement],
        ['object', false],
      ],
      test.missing,
    );
  }
}

function jsonType(loc: Location): CompiledSql {
  return sql`json_type(${loc.base}, ${loc.path})`;
}

function jsonExtract(loc: Location): CompiledSql {
  return sql`json_extract(${loc.base}, ${loc.path})`;
}

/**
 * `CASE subject WHEN k THEN c ... ELSE otherwise END`, leaving out branches equal to the ELSE
 * value. A NULL subject (a missing value) takes the ELSE branch.
 */
function caseOf(subject: CompiledSql, branches: Array<[string, Cond]>, otherwise: boolean): Cond {
  const kept = branches.filter(([, cond]) => cond !== otherwise);
  if (kept.length === 0) return otherwise;
  const whens = kept.map(([key, cond]) => sql`WHEN ${raw(`'${key}'`)} THEN ${toSql(cond)}`);
  return sql`(CASE ${subject} ${join(whens, ' ')} ELSE ${raw(otherwise ? '1' : '0')} END)`;
}

// ---------------------------------------------------------------------------------------------
// Sargable forms over declared indexes

/**
 * A condition every document matching `{path: {operator: operand}}` satisfies, written over the
 * keys of a declared top-level `path` (`indexKeySql`, the indexes' own expressions), or null
 * when the operator has none. An array at `path` matches by its elements, which a key cannot
 * show, so each form also admits the array marker: equality lists it, a lower bound uses the
 * `high` key (marker above every value), an upper bound the `low` key (marker below every
 * number). SQLite orders NULL < numbers < text < blobs, and `json_extract` reads true/false as
 * 1/0; the forms admit more than the matches where that is simpler, never fewer.
 */
export function indexedForm(path: string, operator: string, operand: JsonValue): CompiledSql | null {
  const high = raw(indexKeySql(path, 'high', 'd.body'));
  const low = raw(indexKeySql(path, 'low', 'd.body'));
  switch (operator) {
    case '$in': {
      if (!Array.isArray(operand) || operand.length === 0) return null;
      const values: CompiledSql[] = [];
      for (const v of operand) {
        if (typeof v === 'string' || typeof v === 'number') values.push(param(v));
        else if (typeof v === 'boolean') values.push(param(v ? 1 : 0));
        // A null matches missing fields, which no key lookup finds.
        else return null;
      }
      values.push(raw(ARRAY_MARKER.high));
      return sql`${high} IN (${join(values, ', ')})`;
    }
    case '$gt':
    case '$gte':
      if (typeof operand !== 'number' && typeof operand !== 'string') return null;
      return sql`${high} ${raw(RANGE_OPERATORS.get(operator)!)} ${param(operand)}`;
    case '$lt':
    case '$lte':
      if (typeof operand !== 'number' && typeof operand !== 'string') return null;
      return sql`${low} ${raw(RANGE_OPERATORS.get(operator)!)} ${param(operand)}`;
    case '$exists':
      // A JSON null reads as SQL NULL too: only absence has a sargable form.
      return operand === false ? sql`${high} IS NULL` : null;
    default:
      return null;
  }
}

interface Bounds {
  lower: { operator: '$gt' | '$gte'; operand: number | string };
  upper: { operator: '$lt' | '$lte'; operand: number | string };
}

/** A lower and an upper bound of the same type (number or string) in one field's condition. */
function boundsOf(conditions: Array<[string, JsonValue]>): Bounds | null {
  let lower: Bounds['lower'] | undefined;
  let upper: Bounds['upper'] | undefined;
  for (const [operator, operand] of conditions) {
    if (typeof operand !== 'number' && typeof operand !== 'string') continue;
    if (operator === '$gt' || operator === '$gte') lower = { operator, operand };
    if (operator === '$lt' || operator === '$lte') upper = { operator, operand };
  }
  if (!lower || !upper || typeof lower.operand !== typeof upper.operand) return null;
  return { lower, upper };
}

/**
 * Both bounds on the `high` key: one index range, plus the array marker (an array matches by
 * its elements, which its key cannot show) as a second range SQLite's OR optimisation searches.
 */
function rangeForm(path: string, { lower, upper }: Bounds, collection: string | null): CompiledSql {
  const high = raw(indexKeySql(path, 'high', 'd.body'));
  const within = raw(collection === null ? '' : `${collection} AND `);
  return sql`((${within}${high} ${raw(RANGE_OPERATORS.get(lower.operator)!)} ${param(lower.operand)} AND ${high} ${raw(RANGE_OPERATORS.get(upper.operator)!)} ${param(upper.operand)}) OR (${within}${high} = ${raw(ARRAY_MARKER.high)}))`;
}

/** Whether `sortKeyForms` states this one condition exactly (see `#sortKeyExact`). */
function sortKeyStates(operator: string, operand: JsonValue): boolean {
  if (operator === '$in') {
    return (
      Array.isArray(operand) &&
      operand.length > 0 &&
      operand.every((v) => v === null || typeof v !== 'object')
    );
  }
  return RANGE_OPERATORS.has(operator) && (typeof operand === 'number' || typeof operand === 'string');
}

/**
 * Exact forms over the sort index of a path that holds no array (`arrayFree`): there a document
 * has one value, and its sort key places it in MongoDB's order, type brackets included: `$in`
 * is a list of keys (null's key is also a missing field's, as `{f: null}` wants), a range is a
 * key range inside its type's bracket. Other operators get none.
 */
export function sortKeyForms(path: string, conditions: Array<[string, JsonValue]>): CompiledSql[] {
  const key = raw(sortKeySql(path, 'd.body'));
  const forms: CompiledSql[] = [];
  const bounds = boundsOf(conditions);
  for (const [operator, operand] of conditions) {
    if (operator === '$in' && Array.isArray(operand) && operand.length > 0) {
      const scalars = operand.filter(
        (v): v is null | number | string | boolean => v === null || typeof v !== 'object',
      );
      if (scalars.length === operand.length) {
        forms.push(
          sql`${key} IN (${join(
            scalars.map((v) => param(scalarSortKey(v))),
            ', ',
          )})`,
        );
      }
      continue;
    }
    const symbol = RANGE_OPERATORS.get(operator);
    if (symbol === undefined || (typeof operand !== 'number' && typeof operand !== 'string')) continue;
    forms.push(sql`${key} ${raw(symbol)} ${param(scalarSortKey(operand))}`);
    // With both bounds the key range is closed already; one bound stays inside its bracket.
    if (bounds) continue;
    const bracket = typeof operand === 'number' ? 'number' : 'string';
    const end = bracket === 'number' ? BRACKET_START.string : BRACKET_START.object;
    forms.push(
      operator === '$gt' || operator === '$gte'
        ? sql`${key} < ${param(end)}`
        : sql`${key} >= ${param(BRACKET_START[bracket])}`,
    );
  }
  return forms;
}

/**
 * The paths `filter` and `sort` name that are in `indexed`: the ones worth an array probe
 * (`EmbeddedIndexes.arrayFree`). Walks `$and`/`$or`/`$nor` with an explicit stack.
 */
export function indexedPathsOf(
  filter: StoredFilter,
  sort: FindQuery['sort'],
  indexed: ReadonlySet<string>,
): Set<string> {
  const found = new Set<string>();
  if (indexed.size === 0) return found;
  for (const [path] of sort) if (indexed.has(path)) found.add(path);
  for (const path of pathsNamed(filter)) if (indexed.has(path)) found.add(path);
  return found;
}
