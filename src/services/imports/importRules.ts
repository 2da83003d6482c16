/**
 * The rules of an import, as pure functions: its options, what a record must be to become a
 * document, and what happens to a record whose id is already taken.
 */
import { z } from 'zod';
import { AppError, invalidQuery } from '../../errors.js';
import { fieldNameProblem, printableName } from '../../fieldNames.js';
import type { JsonObject, JsonValue } from '../../store/port.js';
import { RESERVED_FIELD } from '../../store/storedForm.js';
import { assertBodyIdMatches, userFields } from '../documentRules.js';
import { newDocumentId } from '../documentWrites.js';

export const ON_CONFLICT = ['fail', 'skip', 'overwrite'] as const;
export type OnConflict = (typeof ON_CONFLICT)[number];

export interface ImportOptions {
  onConflict: OnConflict;
  /** The field whose value is the document id; `_id` by default. */
  idField: string;
}

/** The import's query parameters: what parseImportOptions accepts and OpenAPI describes. */
export const importQuerySchema = z.strictObject({
  onConflict: z.enum(ON_CONFLICT).optional().meta({
    description:
      'What to do with a record whose id exists: `fail` (default, 409, nothing written), `skip`, `overwrite`.',
  }),
  idField: z
    .string()
    // The document rule itself, so any top-level name a document may hold can carry its id.
    .refine(
      (name) => fieldNameProblem(name) === null && name !== RESERVED_FIELD,
      'not a field name a document may hold',
    )
    .optional()
    .meta({ description: 'Top-level field holding the document id; default `_id`.' }),
});

/** `?onConflict=&idField=`; anything else in the query is refused (a typo would change nothing). */
export function parseImportOptions(query: Record<string, string | string[] | undefined>): ImportOptions {
  for (const [key, value] of Object.entries(query)) {
    if (Array.isArray(value)) throw invalidQuery(key, 'given more than once');
  }
  const parsed = importQuerySchema.safeParse(query);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys') {
      throw invalidQuery(issue.keys[0] ?? 'query', 'unknown parameter; expected onConflict or idField');
    }
    const param = String(issue?.path[0] ?? 'query');
    const value = query[param];
    throw invalidQuery(
      param,
      param === 'onConflict'
        ? `must be one of ${ON_CONFLICT.join(', ')}, not '${String(value)}'`
        : `'${printableName(String(value))}' is not a top-level field name: ${fieldNameProblem(String(value)) ?? `${RESERVED_FIELD} is reserved`}`,
    );
  }
  return { onConflict: parsed.data.onConflict ?? 'fail', idField: parsed.data.idField ?? '_id' };
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

/** `$createdAt`/`$updatedAt` as `isoNow()` writes them: 24 characters until the year 10000. */
const TIMESTAMP_CHARS = new Date(0).toISOString().length;
/** What the metadata adds at most to a document's JSON after its fields. */
const METADATA_TAIL_BYTES = Buffer.byteLength(
  `,"$createdAt":"${'0'.repeat(TIMESTAMP_CHARS)}","$updatedAt":"${'0'.repeat(TIMESTAMP_CHARS)}","$version":${Number.MAX_SAFE_INTEGER}}`,
);

/**
 * The UTF-8 bytes of `JSON.stringify` of the document a record becomes (`_id`, its fields, the
 * metadata) at the largest version number there can be, from the fields' own JSON text: what
 * documentRules.ts measures, without building and serialising the document again.
 */
export function largestDocumentBytes(id: string, fieldsJson: string): number {
  // `{"_id":<id>` then, unless there are no fields, `,` and the fields without their braces.
  const fields = fieldsJson === '{}' ? 0 : Buffer.byteLength(fieldsJson) - 1;
  return '{"_id":'.length + Buffer.byteLength(JSON.stringify(id)) + fields + METADATA_TAIL_BYTES;
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
