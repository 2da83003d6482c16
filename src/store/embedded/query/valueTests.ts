/** Value tests: what one filter operator asks of one value seen at a path. */
import type { JsonValue } from '../../port.js';
import { type CompiledSql, type Cond, join, param, raw, type SqlParam, sql } from './sqlFragments.js';

/** SQLite's `json_type` names for scalars. */
export type ScalarType = 'null' | 'true' | 'false' | 'integer' | 'real' | 'text';
export const SCALAR_TYPES: ScalarType[] = ['null', 'true', 'false', 'integer', 'real', 'text'];

export interface ValueTest {
  /** Whether a MISSING slot satisfies the test (`$in` holding null). */
  missing: boolean;
  /** Whether any present value (object, array, scalar) satisfies it (`$exists`). */
  anyPresent: boolean;
  /** The condition on a scalar of `type` whose SQL value is `value`. */
  scalar(type: ScalarType, value: CompiledSql): Cond;
}

export function inTest(values: JsonValue[]): ValueTest {
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

export const RANGE_OPERATORS = new Map([
  ['$gt', '>'],
  ['$gte', '>='],
  ['$lt', '<'],
  ['$lte', '<='],
]);

export function rangeTest(operator: string, operand: JsonValue): ValueTest {
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

export function regexTest(pattern: JsonValue, options: JsonValue | undefined): ValueTest {
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

export const EXISTS_TEST: ValueTest = { missing: false, anyPresent: true, scalar: () => true };
