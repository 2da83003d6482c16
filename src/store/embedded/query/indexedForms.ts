/**
 * Sargable forms over declared indexes: conditions every match satisfies, written over the
 * indexes' own expressions, so the planner can answer a filter from an index.
 */
import type { JsonValue } from '../../port.js';
import { ARRAY_MARKER, indexKeySql, sortKeySql } from '../indexes/indexKeys.js';
import { BRACKET_START, scalarSortKey } from './queryFunctions.js';
import { type CompiledSql, join, param, raw, sql } from './sqlFragments.js';
import { RANGE_OPERATORS } from './valueTests.js';

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

export interface Bounds {
  lower: { operator: '$gt' | '$gte'; operand: number | string };
  upper: { operator: '$lt' | '$lte'; operand: number | string };
}

/** A lower and an upper bound of the same type (number or string) in one field's condition. */
export function boundsOf(conditions: Array<[string, JsonValue]>): Bounds | null {
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
export function rangeForm(path: string, { lower, upper }: Bounds, collection: string | null): CompiledSql {
  const high = raw(indexKeySql(path, 'high', 'd.body'));
  const within = raw(collection === null ? '' : `${collection} AND `);
  return sql`((${within}${high} ${raw(RANGE_OPERATORS.get(lower.operator)!)} ${param(lower.operand)} AND ${high} ${raw(RANGE_OPERATORS.get(upper.operator)!)} ${param(upper.operand)}) OR (${within}${high} = ${raw(ARRAY_MARKER.high)}))`;
}

/** Whether `sortKeyForms` states this one condition exactly (see `#sortKeyExact`). */
export function sortKeyStates(operator: string, operand: JsonValue): boolean {
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
