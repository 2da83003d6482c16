/**
 * The rules of an import, as pure functions: its options, what a record must be to become a
 * document, and what happens to a record whose id is already taken.
 */
import { AppError, invalidQuery } from '../../errors.js';
import type { JsonObject, JsonValue } from '../../store/port.js';
import { assertBodyIdMatches, userFields } from '../documentRules.js';
import { newDocumentId } from '../documentWrites.js';

export const ON_CONFLICT = ['fail', 'skip', 'overwrite'] as const;
export type OnConflict = (typeof ON_CONFLICT)[number];

export interface ImportOptions {
  onConflict: OnConflict;
  /** The field whose value is the document id; `_id` by default. */
  idField: string;
}

const ID_FIELD = /^[^$.\s][^.]{0,127}$/;

/** `?onConflict=&idField=`; anything else in the query is refused (a typo would change nothing). */
export function parseImportOptions(query: Record<string, string | string[] | undefined>): ImportOptions {
  let onConflict: OnConflict = 'fail';
  let idField = '_id';
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (typeof value !== 'string') throw invalidQuery(key, 'given more than once');
    if (key === 'onConflict') {
      const mode = ON_CONFLICT.find((m) => m === value);
      if (!mode) throw invalidQuery(key, `must be one of ${ON_CONFLICT.join(', ')}, not '${value}'`);
      onConflict = mode;
    } else if (key === 'idField') {
      if (!ID_FIELD.test(value) || value === '__proto__' || value === '_folio') {
        throw invalidQuery(key, `'${value}' is not a top-level field name`);
      }
      idField = value;
    } else throw invalidQuery(key, 'unknown parameter; expected onConflict or idField');
  }
  return { onConflict, idField };
}

/** A record ready to be written: its id (given or generated) and its user fields. */
export interface PreparedRecord {
  id: string;
  /** Whether the id came from the record (so a re-run meets it again) or was generated. */
  given: boolean;
  fields: JsonObject;
}

/**
 * The document a record becomes, by the same rules as a single POST (documentRules.ts). With an
 * `idField` other than `_id`, the field stays in the document and `_id`, if present, must agree.
 * CSV reads `123` as a number, so whole-number ids are taken as their decimal text.
 */
export function prepareRecord(value: unknown, idField: string): PreparedRecord {
  const { fields, id: bodyId } = userFields(value, 'A record');
  let given: JsonValue | undefined = bodyId;
  if (idField !== '_id') {
    given = Object.hasOwn(fields, idField) ? fields[idField] : undefined;
    if (given === undefined) {
      throw new AppError(400, 'missing_id', `The record has no "${idField}" field to take its id from.`);
    }
  }
  const id = newDocumentId(idText(given), idField);
  if (idField !== '_id' && bodyId !== undefined) assertBodyIdMatches(idText(bodyId), id);
  return { id, given: given !== undefined, fields };
}

function idText(value: JsonValue | undefined): JsonValue | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? String(value) : value;
}

export type ImportAction = 'create' | 'overwrite' | 'skip' | 'conflict';

/**
 * What happens to a record given whether its id is taken (by a stored document or an earlier
 * record of the same import): `fail` imports never write over anything (a taken id found while
 * writing is the record's error; one found before writing refuses the whole import).
 */
export function decideAction(onConflict: OnConflict, taken: boolean): ImportAction {
  if (!taken) return 'create';
  if (onConflict === 'overwrite') return 'overwrite';
  return onConflict === 'skip' ? 'skip' : 'conflict';
}

/** One entry of an import's `errors`: a record that was not imported, and why. */
export interface ImportError {
  index: number;
  line?: number;
  _id?: string;
  code: string;
  message: string;
}

export function importError(
  record: { index: number; line?: number | undefined },
  code: string,
  message: string,
  id?: string,
): ImportError {
  return {
    index: record.index,
    ...(record.line === undefined ? {} : { line: record.line }),
    ...(id === undefined ? {} : { _id: id }),
    code,
    message,
  };
}
