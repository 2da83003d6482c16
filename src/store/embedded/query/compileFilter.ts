/**
 * The canonical MongoDB filter (the subset `src/query/` generates) → a SQL condition over the
 * `documents` table (alias `d`), with MongoDB's semantics.
 *
 * - `_id`, `_folio.version`, `_folio.createdAt` and `_folio.updatedAt` compile to the `id`,
 *   `version`, `created_at` and `updated_at` columns, so the primary key and the
 *   (scope, collection, <column>, id) indexes serve filters and sorts on them. Those values are
 *   always present and of one type, which keeps the column forms exact: `$version` never equals
 *   a string, `_id` never compares with a number.
 * - Any other path reads `d.body` with SQLite's JSON functions, following MongoDB's path
 *   traversal (see `src/store/documentQuery/pathValues.ts`): arrays before the last segment are traversed into
 *   their object elements, numeric segments also pick array positions, an array at the end
 *   matches when any element does, and a missing field matches `null`. Type brackets are kept:
 *   numbers compare only with numbers, strings only with strings (binary UTF-8 order, like
 *   MongoDB's default collation).
 * - Every value and every JSON path is a bound parameter. Field names go into JSON paths as
 *   double-quoted labels escaped like JSON strings, which SQLite reads back exactly, so no field
 *   name can change the shape of a path or of the SQL. The SQL text depends only on the shape of
 *   the query, which keeps prepared statements reusable.
 */
import { MAX_NUMERIC_SEGMENTS } from '../../documentQuery/fieldPath.js';
import { arrayIndexOf } from '../../documentQuery/pathValues.js';
import type { JsonValue, StoredFilter } from '../../port.js';
import { boundsOf, indexedForm, rangeForm, sortKeyForms, sortKeyStates } from './indexedForms.js';
import {
  and,
  COLUMNS,
  type CompiledSql,
  type Cond,
  join,
  label,
  NO_INDEXES,
  not,
  or,
  param,
  raw,
  sql,
  toSql,
} from './sqlFragments.js';
import {
  EXISTS_TEST,
  inTest,
  RANGE_OPERATORS,
  rangeTest,
  regexTest,
  SCALAR_TYPES,
  type ValueTest,
} from './valueTests.js';

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
          // `$or` and `$nor` come only from cursor keysets (src/store/documentQuery/cursor.ts).
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
