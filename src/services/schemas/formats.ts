/**
 * The `format`s a collection schema may use, each checked in linear time: ajv-formats' "fast"
 * definitions, their regular expressions run by RE2 (re2js) instead of the backtracking engine.
 * Formats whose expression RE2 cannot run (look-arounds) or that run code of their own over the
 * value (`regex`) are left out; a schema naming one is refused (schemaRules.ts).
 */
import type { Format } from 'ajv';
import { fastFormats } from 'ajv-formats/dist/formats.js';
import { RE2JS } from 're2js';

/** Formats whose definitions are plain functions over numbers (int32, ...) or no check at all. */
const NUMERIC_OR_FREE = new Set(['int32', 'int64', 'float', 'double', 'password', 'binary']);

function linearRegExp(source: RegExp): { test(value: string): boolean } | null {
  try {
    const flags = source.flags.includes('i') ? RE2JS.CASE_INSENSITIVE : 0;
    const re = RE2JS.compile(RE2JS.translateRegExp(source.source), flags);
    return { test: (value: string) => re.test(value) };
  } catch {
    return null;
  }
}

function linearFormat(name: string, format: unknown): Format | null {
  if (format instanceof RegExp) {
    const re = linearRegExp(format);
    return re ? (value: string) => re.test(value) : null;
  }
  if (typeof format === 'object' && format !== null && 'validate' in format) {
    const { validate } = format as { validate: unknown };
    if (validate instanceof RegExp) {
      const re = linearRegExp(validate);
      return re ? (value: string) => re.test(value) : null;
    }
  }
  return NUMERIC_OR_FREE.has(name) ? (format as Format) : null;
}

function buildFormats(): Map<string, Format> {
  const formats = new Map<string, Format>();
  for (const [name, format] of Object.entries(fastFormats)) {
    const linear = linearFormat(name, format);
    if (linear !== null) formats.set(name, linear);
  }
  return formats;
}

export const LINEAR_FORMATS: ReadonlyMap<string, Format> = buildFormats();
export const SUPPORTED_FORMATS: ReadonlySet<string> = new Set(LINEAR_FORMATS.keys());
