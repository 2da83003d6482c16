/**
 * The pieces compiled SQL is built from: text and its bound parameters kept in step, conditions
 * that may be known at compile time, JSON path labels, and the metadata columns.
 */

export type SqlParam = string | number | bigint | Buffer | null;
export interface CompiledSql {
  sql: string;
  params: SqlParam[];
}

/**
 * The stored paths that live in their own indexed columns. A Map: paths are the client's, and
 * `constructor` or `hasOwnProperty` looked up in a plain object would find Object.prototype's.
 */
export const COLUMNS = new Map<string, { sql: string; type: 'text' | 'integer' }>([
  ['_id', { sql: 'd.id', type: 'text' }],
  ['_folio.version', { sql: 'd.version', type: 'integer' }],
  ['_folio.createdAt', { sql: 'd.created_at', type: 'text' }],
  ['_folio.updatedAt', { sql: 'd.updated_at', type: 'text' }],
]);

/** No declared indexes (the default of the compilers). */
export const NO_INDEXES: ReadonlySet<string> = new Set();

export function raw(text: string): CompiledSql {
  return { sql: text, params: [] };
}

export function param(value: SqlParam): CompiledSql {
  return { sql: '?', params: [value] };
}

/** Template literal whose holes are fragments, so text and parameters stay in step. */
export function sql(strings: TemplateStringsArray, ...parts: CompiledSql[]): CompiledSql {
  let text = strings[0]!;
  const params: SqlParam[] = [];
  parts.forEach((part, i) => {
    text += part.sql + strings[i + 1]!;
    params.push(...part.params);
  });
  return { sql: text, params };
}

export function join(parts: CompiledSql[], separator: string): CompiledSql {
  return { sql: parts.map((p) => p.sql).join(separator), params: parts.flatMap((p) => p.params) };
}

/** A condition that may be known at compile time. */
export type Cond = CompiledSql | boolean;

const TRUE = raw('1');
const FALSE = raw('0');

export function toSql(cond: Cond): CompiledSql {
  return cond === true ? TRUE : cond === false ? FALSE : cond;
}

export function and(conds: Cond[]): Cond {
  if (conds.includes(false)) return false;
  const rest = conds.filter((c): c is CompiledSql => c !== true);
  if (rest.length === 0) return true;
  if (rest.length === 1) return rest[0]!;
  return sql`(${join(rest, ' AND ')})`;
}

export function or(conds: Cond[]): Cond {
  if (conds.includes(true)) return true;
  const rest = conds.filter((c): c is CompiledSql => c !== false);
  if (rest.length === 0) return false;
  if (rest.length === 1) return rest[0]!;
  return sql`(${join(rest, ' OR ')})`;
}

export function not(cond: Cond): Cond {
  return typeof cond === 'boolean' ? !cond : sql`NOT ${cond}`;
}

/** `"seg"` as a JSON path step; SQLite decodes JSON string escapes in quoted labels. */
export function label(segment: string): string {
  return `.${JSON.stringify(segment)}`;
}
