/**
 * Field paths as clients write them in `filter[...]`, `sort` and `select`, checked and mapped to
 * the stored form. A path is dot-separated field names; the three metadata names are accepted
 * only as whole paths. Everything else starting with `$` is refused so no client text can read as
 * a MongoDB operator, and `_folio` (where metadata is stored) is refused so clients address
 * metadata only through its public names.
 */
import { invalidQuery } from '../../errors.js';
import { fieldNameProblem, printableName } from '../../fieldNames.js';
import { isMetaField, RESERVED_FIELD, storedPath } from '../storedForm.js';
import { arrayIndexOf } from './pathValues.js';

/** Deep enough for real documents; bounds the size of the SQL a path compiles to. */
export const MAX_PATH_SEGMENTS = 16;
export const MAX_PATH_LENGTH = 512;
/**
 * A numeric segment (`items.0`) may pick an array position as well as name a field, and each one
 * doubles the work of matching the rest of the path, so a path may hold only a few.
 */
export const MAX_NUMERIC_SEGMENTS = 4;

/**
 * The stored path for an API field path, or an `invalid_query` error naming `param`.
 * `param` is the query parameter the path came from (`filter[a.b][gt]`, `sort`, `select`).
 */
export function toStoredPath(param: string, apiPath: string): string {
  if (isMetaField(apiPath)) return storedPath(apiPath);
  if (apiPath.length === 0) throw invalidQuery(param, 'empty field name');
  if (apiPath.length > MAX_PATH_LENGTH) {
    throw invalidQuery(param, `field path longer than ${MAX_PATH_LENGTH} characters`);
  }
  const segments = apiPath.split('.');
  if (segments.length > MAX_PATH_SEGMENTS) {
    throw invalidQuery(param, `field path deeper than ${MAX_PATH_SEGMENTS} levels`);
  }
  for (const segment of segments) {
    if (segment.length === 0) {
      throw invalidQuery(param, `empty segment in field path '${printableName(apiPath)}'`);
    }
    if (segment.startsWith('$')) {
      throw invalidQuery(
        param,
        `field path '${printableName(apiPath)}' has a segment starting with '$'; only $version, $createdAt and $updatedAt (as whole paths) may`,
      );
    }
    const problem = fieldNameProblem(segment);
    if (problem) throw invalidQuery(param, `field path '${printableName(apiPath)}': ${problem}`);
  }
  if (segments.filter((s) => arrayIndexOf(s) !== undefined).length > MAX_NUMERIC_SEGMENTS) {
    throw invalidQuery(param, `field path has more than ${MAX_NUMERIC_SEGMENTS} numeric segments`);
  }
  if (segments[0] === RESERVED_FIELD) {
    throw invalidQuery(param, `'${RESERVED_FIELD}' is reserved; use $version, $createdAt or $updatedAt`);
  }
  return apiPath;
}
