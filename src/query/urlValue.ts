/**
 * How a URL query value (always a string) is read. A value may stand for a JSON scalar as well as
 * for itself: `30` matches the number 30 and the string "30"; `true`, `false` and `null` likewise.
 */
import type { JsonPrimitive } from '../store/port.js';

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

/**
 * The JSON scalar the text spells (a finite number, true, false or null), or `undefined` when it
 * spells none and is only a string. Strict JSON grammar: ` 5`, `+5`, `05` and `0x5` are strings.
 */
export function jsonScalarReading(raw: string): Exclude<JsonPrimitive, string> | undefined {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  if (raw === 'null') return null;
  if (!JSON_NUMBER.test(raw)) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) return undefined;
  // -0 equals 0 everywhere it matters; keeping it would only make filters look odd.
  return n === 0 ? 0 : n;
}

/** The raw string and, when it differs, its JSON scalar reading: the values an equality accepts. */
export function equalityCandidates(raw: string): JsonPrimitive[] {
  const reading = jsonScalarReading(raw);
  return reading === undefined ? [raw] : [raw, reading];
}

/**
 * The operand of a range comparison: numeric text compares as a number, anything else as a
 * string (so ISO 8601 timestamps order correctly).
 */
export function rangeOperand(raw: string): number | string {
  const reading = jsonScalarReading(raw);
  return typeof reading === 'number' ? reading : raw;
}

// ECMAScript's SyntaxCharacter set plus `/`: escaping these is valid both in PCRE (MongoDB) and
// in a JavaScript RegExp with the `u` flag (the embedded store), which rejects other escapes.
const REGEX_SYNTAX = /[\\^$.*+?()[\]{}|/]/g;

/** A regular expression source matching `text` literally. */
export function escapeRegex(text: string): string {
  // NUL is spelled `\x00` because MongoDB refuses a pattern holding a raw NUL byte.
  return text.replace(REGEX_SYNTAX, '\\$&').replaceAll('\0', '\\x00');
}
