/**
 * `filter[field]=v` and `filter[field][op]=v` URL parameters → one MongoDB filter document over
 * the stored form: the canonical query both stores answer. Only `$and`, `$in`, `$nin`, `$gt`,
 * `$gte`, `$lt`, `$lte`, `$regex` (+ `$options: 'i'`) and `$exists` are ever generated, and every
 * client value lands in an operand position, never in a key.
 */
import { z } from 'zod';
import { invalidQuery } from '../errors.js';
import { toStoredPath } from '../store/documentQuery/fieldPath.js';
import type { JsonObject, JsonPrimitive, JsonValue, StoredFilter } from '../store/port.js';
import { equalityCandidates, escapeRegex, rangeOperand } from './urlValue.js';

export type RawQuery = Record<string, string | string[] | undefined>;

export const FILTER_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'in', 'exists'] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

/** A hard ceiling before any plan limit, so a crafted URL cannot build a huge query. */
export const MAX_FILTERS = 100;
/** Items in one `in` list. */
export const MAX_IN_ITEMS = 100;
/**
 * Characters in a `contains` value. It becomes a regular expression, whose compiler overflows
 * on patterns of some ten thousand characters; no real search needs more than this.
 */
export const MAX_CONTAINS_LENGTH = 1000;

const operatorSchema = z.enum(FILTER_OPERATORS);
const existsSchema = z.enum(['true', 'false']);

/**
 * The `filter` family as OpenAPI describes it: a deepObject, `filter[field]=value` or
 * `filter[field][op]=value`. Parsing is parseFilterParams's, which checks every field and operator.
 */
// A URL value is text; numbers and booleans are how typed clients write them (`{ n: { gte: 1 } }`).
const urlValueSchema = z.union([z.string(), z.number(), z.boolean()]);
/**
 * Each operator's operand. `in` takes a list: comma-separated in the URL, an array in a typed
 * client (whose serializer joins it), so the generated types accept `{ in: ['A', 'B'] }`.
 */
const operandsSchema = z.object({
  eq: urlValueSchema.optional(),
  neq: urlValueSchema.optional(),
  gt: urlValueSchema.optional(),
  gte: urlValueSchema.optional(),
  lt: urlValueSchema.optional(),
  lte: urlValueSchema.optional(),
  contains: urlValueSchema.optional(),
  in: z.union([z.array(urlValueSchema), urlValueSchema]).optional(),
  exists: urlValueSchema.optional(),
} satisfies Record<FilterOperator, z.ZodType>);
export const filterParamSchema = z
  .record(z.string(), z.union([urlValueSchema, operandsSchema]))
  .optional()
  .meta({
    description: `Filters, combined with AND: \`filter[field]=value\` (equality) or \`filter[field][op]=value\` with op one of ${FILTER_OPERATORS.join(', ')}; \`in\` takes a comma-separated list. Dot notation for nested fields.`,
    param: { style: 'deepObject', explode: true },
  });

// filter[<field>] or filter[<field>][<op>]; brackets may not nest or appear inside names.
const FILTER_KEY = /^filter\[([^[\]]*)\](?:\[([^[\]]*)\])?$/;

/** Whether a parameter name belongs to the filter family (well-formed or not). */
export function isFilterParam(key: string): boolean {
  return key === 'filter' || key.startsWith('filter[');
}

/**
 * The filter built from the `filter...` parameters of `query`; other parameters are ignored, so
 * each caller (list, export, stream) validates its own. Throws `invalid_query` naming the
 * offending parameter. `filterCount` is what plan limits count.
 */
export function parseFilterParams(query: RawQuery): { filter: StoredFilter; filterCount: number } {
  const clauses: StoredFilter[] = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || !isFilterParam(key)) continue;
    if (clauses.length >= MAX_FILTERS) {
      throw invalidQuery('filter', `too many filters (at most ${MAX_FILTERS})`);
    }
    clauses.push(parseFilterParam(key, singleValue(key, value)));
  }
  const filter: StoredFilter =
    clauses.length === 0 ? {} : clauses.length === 1 ? clauses[0]! : { $and: clauses };
  return { filter, filterCount: clauses.length };
}

/** A parameter given more than once arrives as an array; its meaning would be ambiguous. */
export function singleValue(key: string, value: string | string[]): string {
  if (typeof value === 'string') return value;
  throw invalidQuery(key, 'given more than once');
}

function parseFilterParam(key: string, raw: string): StoredFilter {
  const match = FILTER_KEY.exec(key);
  if (!match) {
    throw invalidQuery(
      key,
      'malformed filter parameter; expected filter[field]=value or filter[field][op]=value',
    );
  }
  return clause(key, match[1]!, match[2], raw);
}

/** One field's condition: `field` as the client spells it, `opText` undefined for plain equality. */
function clause(
  key: string,
  field: string,
  opText: string | undefined,
  raw: string | string[],
): StoredFilter {
  const path = toStoredPath(key, field);
  if (opText === '') throw invalidQuery(key, 'empty operator');
  const op = operatorSchema.safeParse(opText ?? 'eq');
  if (!op.success) {
    throw invalidQuery(key, `unknown operator '${opText}'; expected one of ${FILTER_OPERATORS.join(', ')}`);
  }
  if (Array.isArray(raw) && op.data !== 'in') throw invalidQuery(key, 'only in takes a list');
  return { [path]: condition(key, op.data, raw) };
}

/**
 * The same filters written as one JSON object, as a typed client writes the `filter` parameter
 * (filterParamSchema): `{"published": true}`, `{"n": {"gte": 3}}`, `{"team": {"in": ["a", "b"]}}`.
 * Each value reads exactly as its text would in the URL (so `true` also matches "true"); an `in`
 * list's items are taken whole, commas and all. Errors name `param` and the field, e.g.
 * `rules[0].filter[n][gte]`. What a key's rule filter compiles with (services/keyAccess.ts).
 */
export function parseFilterObject(object: JsonObject, param = 'filter'): StoredFilter {
  const clauses: StoredFilter[] = [];
  for (const [field, value] of Object.entries(object)) {
    const key = `${param}[${field}]`;
    const conditions = isOperands(value) ? Object.entries(value) : [[undefined, value] as const];
    for (const [opText, operand] of conditions) {
      if (clauses.length >= MAX_FILTERS)
        throw invalidQuery(param, `too many filters (at most ${MAX_FILTERS})`);
      const opKey = opText === undefined ? key : `${key}[${opText}]`;
      clauses.push(clause(opKey, field, opText, operandText(opKey, operand)));
    }
  }
  return clauses.length === 0 ? {} : clauses.length === 1 ? clauses[0]! : { $and: clauses };
}

function isOperands(value: JsonValue): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON operand as the URL's text: a scalar as JSON spells it, a list of scalars as a list. */
function operandText(key: string, operand: JsonValue): string | string[] {
  if (Array.isArray(operand)) {
    if (operand.length > MAX_IN_ITEMS) throw invalidQuery(key, `at most ${MAX_IN_ITEMS} values`);
    return operand.map((item) => scalarText(key, item));
  }
  return scalarText(key, operand);
}

function scalarText(key: string, value: JsonValue): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null)
    throw invalidQuery(key, 'expected a string, number, boolean or null');
  return JSON.stringify(value);
}

function condition(key: string, op: FilterOperator, raw: string | string[]): { [op: string]: JsonValue } {
  if (Array.isArray(raw)) return { $in: inList(key, raw) };
  switch (op) {
    case 'eq':
      return { $in: equalityCandidates(raw) };
    case 'neq':
      return { $nin: equalityCandidates(raw) };
    case 'in':
      // No escaping: a value holding a comma cannot be listed in the URL (use eq for it).
      return { $in: inList(key, raw.split(',')) };
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      return { [`$${op}`]: rangeOperand(raw) };
    case 'contains':
      if (raw.length > MAX_CONTAINS_LENGTH) {
        throw invalidQuery(key, `contains takes at most ${MAX_CONTAINS_LENGTH} characters`);
      }
      return { $regex: escapeRegex(raw), $options: 'i' };
    case 'exists': {
      const flag = existsSchema.safeParse(raw);
      if (!flag.success) throw invalidQuery(key, `exists takes true or false, not '${raw}'`);
      return { $exists: flag.data === 'true' };
    }
  }
}

function inList(key: string, items: string[]): JsonPrimitive[] {
  if (items.length > MAX_IN_ITEMS) throw invalidQuery(key, `at most ${MAX_IN_ITEMS} values`);
  return distinct(items.flatMap(equalityCandidates));
}

function distinct(values: JsonPrimitive[]): JsonPrimitive[] {
  // Set equality is SameValueZero: "1" and 1 stay apart, as they must.
  return [...new Set(values)];
}
