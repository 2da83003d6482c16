/**
 * What one CSV cell means, both ways. The rules, in order (docs/import-export.md):
 *
 * - an empty cell: the field is absent;
 * - `true` / `false` (any letter case): a boolean; `null`: null;
 * - a JSON number (`-12`, `3.5`, `1e6`; not `007`, `+1`, `.5`, `0x1F`): a number, except an
 *   integer written out in more digits than a double holds exactly (it stays text: ids, card
 *   and phone numbers lose nothing);
 * - `[...]` that is valid JSON: an array; `{}`: an empty object;
 * - `"..."` that is a valid JSON string literal: that string;
 * - anything else: the text itself.
 *
 * Export writes every value so that these rules read it back exactly: a string the rules would
 * read as something else (`"42"`, `"true"`, `""`, `"[x]"` when it parses...) is written as a JSON
 * string literal, which is how CSV keeps the string "42" apart from the number 42.
 *
 * Export also neutralises formulas (OWASP, CSV injection): a text cell a spreadsheet would run
 * (starting with `=`, `+`, `-`, `@`, tab or carriage return) gets a `'` in front, unless the
 * caller turns that off for a machine reader. Import never strips the `'`: a hand-written cell
 * `'=x` is the text `'=x`, so the rules above stay the only ones.
 */
import type { JsonValue } from '../store/port.js';

const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const PLAIN_INTEGER = /^-?\d+$/;
/** In a `u` regular expression a paired surrogate is one code point: this finds unpaired ones. */
const LONE_SURROGATE = /\p{Surrogate}/u;
const BOOLEANS = new Map([
  ['true', true],
  ['false', false],
]);

/** The value a cell holds; undefined for an empty cell (the field is absent). */
export function decodeCell(text: string): JsonValue | undefined {
  if (text === '') return undefined;
  const flag = BOOLEANS.get(text.toLowerCase());
  if (flag !== undefined) return flag;
  if (text === 'null') return null;
  if (JSON_NUMBER.test(text)) {
    const n = Number(text);
    const exact = Number.isFinite(n) && !(PLAIN_INTEGER.test(text) && !Number.isSafeInteger(n));
    return exact ? n : text;
  }
  if (text === '{}') return {};
  const first = text[0];
  if (first === '[' || first === '"') {
    const parsed = parseJson(text);
    if (first === '[' ? Array.isArray(parsed) : typeof parsed === 'string') return parsed as JsonValue;
  }
  return text;
}

/** What a spreadsheet runs as a formula when a cell starts with it (OWASP's list). */
const FORMULA_START = /^[=+\-@\t\r]/;

/** `text` as a spreadsheet shows it without running it: a leading `'` before a formula start. */
export function escapeFormula(text: string): string {
  return FORMULA_START.test(text) ? `'${text}` : text;
}

export interface CellOptions {
  /** Neutralise text cells a spreadsheet would run (see escapeFormula); on unless turned off. */
  formulaEscape: boolean;
}

/**
 * The cell text for a leaf value (anything but a non-empty object); '' for an absent field.
 * Only text cells are escaped: numbers, booleans, null, arrays and JSON string literals are
 * typed data that starts with a digit, `-` and a digit, a letter, `[`, `{` or `"`, which no
 * spreadsheet runs (so the number -5 stays `-5`, and the string "-5", written `"-5"`, too).
 */
export function encodeCell(
  value: JsonValue | undefined,
  options: CellOptions = { formulaEscape: false },
): string {
  if (value === undefined) return '';
  if (typeof value === 'string') {
    // A lone surrogate has no UTF-8 form (it would arrive as U+FFFD); JSON escapes it (\ud800).
    if (decodeCell(value) !== value || LONE_SURROGATE.test(value)) return JSON.stringify(value);
    return options.formulaEscape ? escapeFormula(value) : value;
  }
  if (typeof value === 'number') {
    // Large integers in exponent form: written out in digits they would read back as text.
    // JSON.stringify, not String(): the same digits for any finite number (the spec defines one
    // by the other), but String() goes through V8's number-to-string cache, which keeps its
    // latest numbers and their strings alive through young-generation collections. A CSV export
    // of 250,000 documents left 12 MiB of them in the old generation at each run.
    return Number.isInteger(value) && !Number.isSafeInteger(value)
      ? value.toExponential()
      : JSON.stringify(value);
  }
  return JSON.stringify(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    // Not JSON after all (or nested beyond what the parser takes): the cell is text.
    return undefined;
  }
}
