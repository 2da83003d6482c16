/**
 * The SQL expressions of declared indexes' keys (declaredIndexes.ts explains each). The indexes
 * are built from them and the query compiler (query/indexedForms.ts, query/compileSort.ts)
 * writes them into its queries:
 * SQLite uses an expression index only for the very same text, so both take it from here.
 */

/** The SQLite JSON path of a stored path: each segment a quoted label, read back exactly. */
export function jsonPathOf(path: string): string {
  return `$${path
    .split('.')
    .map((segment) => `.${JSON.stringify(segment)}`)
    .join('')}`;
}

/** A SQL string literal (for index expressions, which cannot take bound parameters). */
export function sqlLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export type KeySide = 'high' | 'low';

/** The array marker of each side (SQL literal). */
export const ARRAY_MARKER: Readonly<Record<KeySide, string>> = { high: "X''", low: '-9e999' };

/**
 * The indexed key of `path` (see the header); `body` is the column as the statement names it.
 * The compiler must write the very same expression for the planner to match it.
 */
export function indexKeySql(path: string, side: KeySide, body: string): string {
  const p = sqlLiteral(jsonPathOf(path));
  return `(CASE json_type(${body}, ${p}) WHEN 'array' THEN ${ARRAY_MARKER[side]} ELSE json_extract(${body}, ${p}) END)`;
}

/**
 * The ascending sort key of a top-level `path` (see the header), with literals: an index
 * expression matches only the very same text. `folio_sort_key` is registered on every
 * connection that opens the file (queryFunctions.ts), as an index expression requires.
 */
export function sortKeySql(path: string, body: string): string {
  return `folio_sort_key(${body} -> ${sqlLiteral(jsonPathOf(path))}, ${sqlLiteral(JSON.stringify([path]))}, 1)`;
}

/**
 * The key of `path` in a unique index: the value, or a blob for a JSON `null` (which
 * `json_extract` reads as SQL NULL, and SQL NULLs never conflict); a missing field stays NULL.
 */
export function uniqueKeySql(path: string, body: string): string {
  const p = sqlLiteral(jsonPathOf(path));
  return `(CASE json_type(${body}, ${p}) WHEN 'null' THEN X'00' ELSE json_extract(${body}, ${p}) END)`;
}
