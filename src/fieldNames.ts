/**
 * The one rule for field names, shared by document bodies (services/documentRules.ts) and by the
 * paths clients write in `filter[...]`, `sort` and `select` (store/documentQuery/fieldPath.ts), so a name that
 * can be stored can be queried and the other way round.
 *
 * Field names are data: `constructor`, `valueOf`, `hasOwnProperty` and every other name are
 * stored, filtered, sorted and selected as themselves. Refused, because they would act as code
 * or be cut short somewhere on the way to a store:
 * - empty names;
 * - a leading `$` (a MongoDB operator) and `.` (a path separator);
 * - `__proto__` (JavaScript's prototype accessor);
 * - control characters U+0000–U+001F, U+007F–U+009F (SQLite's JSON paths and C strings end at NUL,
 *   MongoDB's BSON field names cannot hold one, and none of them belongs in a name);
 * The top-level `_folio`, where the stored form keeps metadata, is refused by the callers
 * (see `RESERVED_FIELD` in store/storedForm.ts).
 */

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `name` may not be a field name (a sentence fragment), or null when it may. */
export function fieldNameProblem(name: string): string | null {
  if (name.length === 0) return 'field names may not be empty';
  if (name.startsWith('$')) return 'field names may not start with "$"';
  if (name.includes('.')) return 'field names may not contain "."';
  if (name === '__proto__') return 'the field name __proto__ is not allowed';
  if (CONTROL_CHARACTER.test(name)) return 'field names may not contain control characters';
  return null;
}

/** A printable form of a client-supplied name for error messages: control characters escaped, long names cut. */
export function printableName(name: string): string {
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  return shown.slice(1, -1);
}

/**
 * Set `obj[key] = value` as an own, enumerable data property whatever `key` is. Plain assignment
 * of `__proto__` would set the prototype (the one accessor on Object.prototype) instead; every
 * other name, `constructor` and `toString` included, assigns an own property, and assignment is
 * what V8 keeps fast (defining each field was a twentieth of an import's CPU).
 */
export function defineField<T>(obj: { [key: string]: T }, key: string, value: T): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}
