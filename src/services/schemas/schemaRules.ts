/**
 * What a collection schema may be. A tenant's schema runs on every write of its collection, on
 * a server other tenants share, so before it is compiled it is held to bounds that keep both its
 * compilation and every validation cheap:
 *
 * - size (`MAX_SCHEMA_BYTES` as JSON), nesting (`MAX_SCHEMA_DEPTH`) and objects
 *   (`MAX_SCHEMA_NODES`), which bound compilation time (and the plan bounds how often a project
 *   may compile: `schemaChangesPerMinute`);
 * - `enum` lists of at most `MAX_ENUM_VALUES`;
 * - references only inside the schema (`$ref` / `$dynamicRef` starting with `#`): nothing is
 *   ever fetched, and a tenant cannot name another tenant's schema;
 * - `pattern` / `patternProperties` compiled by a linear-time engine (validators.ts), at most
 *   `MAX_PATTERNS` of them, each at most `MAX_PATTERN_LENGTH` characters; `format` only from
 *   SUPPORTED_FORMATS (each linear);
 * - `uniqueItems` (pairwise comparison of objects) only with `maxItems` at most
 *   `MAX_UNIQUE_ITEMS` in the same schema object.
 *
 * Every walk over the schema is iterative and bounded by its size.
 */
import { AppError, badRequest, payloadTooLarge } from '../../errors.js';
import type { JsonValue } from '../../store/port.js';
import { isJsonObject, nestsDeeperThan } from '../documentRules.js';
import { SUPPORTED_FORMATS } from './formats.js';

export const MAX_SCHEMA_BYTES = 64 * 1024;
export const MAX_SCHEMA_DEPTH = 32;
/**
 * Objects in schema positions (subschemas, `properties` maps, ...): compilation time grows with
 * them, about 0.2 to 0.6 ms each on a busy two-core machine.
 */
export const MAX_SCHEMA_NODES = 500;
export const MAX_ENUM_VALUES = 1000;
export const MAX_PATTERN_LENGTH = 1024;
/**
 * Patterns in one schema (`pattern`s and `patternProperties` keys). RE2 in JavaScript costs about
 * 0.5 µs a test even when it fails at the first character, and `patternProperties` tests every
 * property of an object against every pattern: 20 patterns over a 1 MiB object of 100,000
 * properties took 1 s. The bound keeps the worst document in that order.
 */
export const MAX_PATTERNS = 20;
export const MAX_UNIQUE_ITEMS = 1000;
export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/** The schema as stored (its JSON text), or a 400/413 saying what is wrong. */
export function checkSchema(schema: unknown): string {
  if (!isJsonObject(schema) && typeof schema !== 'boolean') {
    throw badRequest('schema must be a JSON Schema (an object or a boolean).', { field: 'schema' });
  }
  const text = JSON.stringify(schema);
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_SCHEMA_BYTES) {
    throw payloadTooLarge(`The schema is ${bytes} bytes; the maximum is ${MAX_SCHEMA_BYTES}.`, {
      bytes,
      max: MAX_SCHEMA_BYTES,
    });
  }
  if (nestsDeeperThan(schema, MAX_SCHEMA_DEPTH)) {
    throw schemaRefused(`The schema nests deeper than ${MAX_SCHEMA_DEPTH} levels.`, '');
  }
  if (isJsonObject(schema) && schema.$schema !== undefined && schema.$schema !== DRAFT_2020_12) {
    throw schemaRefused(
      `$schema must be "${DRAFT_2020_12}" (JSON Schema draft 2020-12) or absent.`,
      '/$schema',
    );
  }
  walkSchema(schema);
  return text;
}

function schemaRefused(message: string, path: string): AppError {
  return new AppError(400, 'invalid_schema', message, { schemaPath: path || '/' });
}

/** Every schema object, with its JSON pointer; iterative. */
function walkSchema(root: JsonValue): void {
  const pending: Array<{ value: JsonValue; path: string }> = [{ value: root, path: '' }];
  let nodes = 0;
  const patterns = { count: 0 };
  for (let item = pending.pop(); item; item = pending.pop()) {
    const { value, path } = item;
    if (Array.isArray(value)) {
      value.forEach((child, i) => {
        pending.push({ value: child, path: `${path}/${i}` });
      });
      continue;
    }
    if (!isJsonObject(value)) continue;
    if (++nodes > MAX_SCHEMA_NODES) {
      throw schemaRefused(
        `The schema holds more than ${MAX_SCHEMA_NODES} objects (subschemas, property maps); split it or share parts with $defs and $ref.`,
        path,
      );
    }
    checkKeywords(value, path, patterns);
    for (const [key, child] of Object.entries(value)) {
      // Values that are data, not schemas: an enum or const may hold anything, even `$ref` keys.
      if (key === 'enum' || key === 'const' || key === 'examples' || key === 'default') continue;
      pending.push({ value: child, path: `${path}/${escapePointer(key)}` });
    }
  }
}

function checkKeywords(node: { [key: string]: JsonValue }, path: string, seen: { count: number }): void {
  for (const keyword of ['$ref', '$dynamicRef'] as const) {
    const ref = node[keyword];
    if (ref === undefined || !Object.hasOwn(node, keyword)) continue;
    if (typeof ref !== 'string' || !ref.startsWith('#')) {
      throw schemaRefused(
        `${keyword} "${String(ref).slice(0, 200)}" is not a local reference: only references inside ` +
          'the schema (starting with "#", e.g. "#/$defs/address") are allowed; nothing is ever fetched.',
        `${path}/${keyword}`,
      );
    }
  }
  const enumValues = node.enum;
  if (Object.hasOwn(node, 'enum') && Array.isArray(enumValues) && enumValues.length > MAX_ENUM_VALUES) {
    throw schemaRefused(
      `enum lists ${enumValues.length} values; the maximum is ${MAX_ENUM_VALUES}.`,
      `${path}/enum`,
    );
  }
  const patterns: Array<[string, JsonValue | undefined]> = [];
  if (Object.hasOwn(node, 'pattern')) patterns.push([`${path}/pattern`, node.pattern]);
  const byPattern = node.patternProperties;
  if (Object.hasOwn(node, 'patternProperties') && isJsonObject(byPattern)) {
    for (const key of Object.keys(byPattern)) patterns.push([`${path}/patternProperties`, key]);
  }
  for (const [where, pattern] of patterns) {
    if (typeof pattern === 'string' && ++seen.count > MAX_PATTERNS) {
      throw schemaRefused(`The schema holds more than ${MAX_PATTERNS} patterns.`, where);
    }
    if (typeof pattern === 'string' && pattern.length > MAX_PATTERN_LENGTH) {
      throw schemaRefused(
        `A pattern is ${pattern.length} characters; the maximum is ${MAX_PATTERN_LENGTH}.`,
        where,
      );
    }
  }
  const format = node.format;
  if (Object.hasOwn(node, 'format') && typeof format === 'string' && !SUPPORTED_FORMATS.has(format)) {
    throw schemaRefused(
      `format "${format.slice(0, 100)}" is not supported; use one of: ${[...SUPPORTED_FORMATS].join(', ')}.`,
      `${path}/format`,
    );
  }
  if (Object.hasOwn(node, 'uniqueItems') && node.uniqueItems === true) {
    const max = node.maxItems;
    if (typeof max !== 'number' || max > MAX_UNIQUE_ITEMS) {
      throw schemaRefused(
        `uniqueItems needs maxItems of at most ${MAX_UNIQUE_ITEMS} beside it (comparing every pair of a long array is too slow).`,
        `${path}/uniqueItems`,
      );
    }
  }
}

function escapePointer(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}
