/**
 * Compiled collection schemas. Each schema is compiled by an Ajv instance of its own (draft
 * 2020-12), so one tenant's `$id`s never meet another's; no `loadSchema` is given, so Ajv never
 * fetches anything. Patterns run on RE2 (re2js), whose matching time is linear in the input:
 * no pattern can backtrack catastrophically. Compiled once per schema revision, and kept in a
 * bounded cache.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';
import { AppError } from '../../errors.js';
import type { JsonObject } from '../../store/port.js';
import { LINEAR_FORMATS } from './formats.js';

/** Compiled schemas kept (each a few KiB of generated code). */
export const MAX_COMPILED_SCHEMAS = 500;
/** Violations reported per document. */
export const MAX_REPORTED_ERRORS = 20;

export interface SchemaViolation {
  instancePath: string;
  keyword: string;
  message: string;
}

/** Ajv's `code.regExp`: patterns compiled by RE2 (Ajv passes the `u` flag, which RE2 always is). */
function re2RegExp(pattern: string): { test(value: string): boolean; toString(): string } {
  const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  // Ajv shares compiled patterns by their `toString()`: it must be the pattern itself.
  return { test: (value: string) => re.test(value), toString: () => `/${pattern}/u` };
}
re2RegExp.code = 'require("re2js").RE2JS';

/** A compiled schema: the violations of a value (empty when it fits). */
export type CompiledSchema = (value: JsonObject) => SchemaViolation[];

/**
 * Checks schemas against the draft 2020-12 meta-schema. Shared: it holds only the meta-schemas
 * (compiled once; about 60 ms), never a tenant's schema, so each compilation below can use a
 * fresh instance without them (about 3 ms).
 */
let metaValidator: Ajv2020 | null = null;

function assertValidSchema(schema: unknown): void {
  metaValidator ??= new Ajv2020({ strict: false, logger: false });
  if (metaValidator.validateSchema(schema as object) !== true) {
    const text = metaValidator.errorsText(metaValidator.errors, { dataVar: 'schema' });
    throw new AppError(
      400,
      'invalid_schema',
      `The schema is not valid JSON Schema 2020-12: ${text.slice(0, 500)}`,
    );
  }
}

export function compileSchema(schemaText: string): CompiledSchema {
  const validate = compileValidator(schemaText);
  return (value) => (validate(value) ? [] : violationsOf(validate.errors ?? []));
}

/** Characters of the compiled schema's own code, without the functions it calls (tests). */
export function compiledCodeLength(schemaText: string): number {
  return compileValidator(schemaText).toString().length;
}

function compileValidator(schemaText: string): ValidateFunction {
  const schema = JSON.parse(schemaText) as unknown;
  assertValidSchema(schema);
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    validateFormats: true,
    logger: false,
    // Checked above against the shared meta-schemas.
    meta: false,
    validateSchema: false,
    // Inlining copies a referenced schema's code at every reference: 200 references to one
    // 200-property definition (a 13 KB schema) made 26 MB of code and 20 s of compilation.
    // Each reference is a function call instead: code linear in the schema.
    inlineRefs: false,
    code: { regExp: re2RegExp },
    formats: Object.fromEntries(LINEAR_FORMATS),
  });
  let validate: ValidateFunction;
  try {
    // `$schema` names the one draft allowed (schemaRules.ts), whose meta-schema this instance lacks.
    const compiled =
      typeof schema === 'object' && schema !== null ? { ...schema, $schema: undefined } : schema;
    validate = ajv.compile(compiled as object);
  } catch (error) {
    // Ajv's message says what is wrong with the schema (an unknown keyword value, a pattern RE2
    // cannot run, a reference that resolves nowhere); it never holds another tenant's data.
    const message = error instanceof Error ? error.message : String(error);
    throw new AppError(400, 'invalid_schema', `The schema cannot be compiled: ${message.slice(0, 500)}`);
  }
  return validate;
}

function violationsOf(errors: ErrorObject[]): SchemaViolation[] {
  return errors.slice(0, MAX_REPORTED_ERRORS).map((e) => ({
    instancePath: e.instancePath,
    keyword: e.keyword,
    message: e.message ?? 'is invalid',
  }));
}

/**
 * Compiled schemas by revision (a revision is never reused for another schema), least recently
 * used out first: a compilation costs milliseconds to a few hundred, so the cache never empties
 * at once (which would make every busy collection compile again together).
 */
export class CompiledSchemas {
  readonly #cache: LRUCache<string, CompiledSchema>;
  #compilations = 0;

  constructor(capacity = MAX_COMPILED_SCHEMAS) {
    this.#cache = new LRUCache({ max: capacity });
  }

  /** How many compilations ran (tests: once per revision). */
  get compilations(): number {
    return this.#compilations;
  }

  get(revision: string, schemaText: string): CompiledSchema {
    let compiled = this.#cache.get(revision);
    if (!compiled) {
      compiled = compileSchema(schemaText);
      this.#compilations++;
      this.#cache.set(revision, compiled);
    }
    return compiled;
  }
}
