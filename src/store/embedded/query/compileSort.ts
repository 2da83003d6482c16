/**
 * MongoDB's sort order (BSON type order, arrays by their min/max element) and cursor positions
 * in it → SQL over the `documents` table (alias `d`).
 */
import type { FindQuery, SortPosition } from '../../port.js';
import { sortKeySql } from '../indexes/indexKeys.js';
import { scalarSortKey } from './queryFunctions.js';
import { COLUMNS, type CompiledSql, join, label, NO_INDEXES, param, raw, sql } from './sqlFragments.js';

/**
 * An `ORDER BY` list in MongoDB's order (BSON type order, arrays by their min/max element).
 * A key the declared sort index orders exactly (`sortExpression`) is written as that index's
 * expression, so the planner walks the index instead of sorting the matches.
 */
export function compileSort(
  sort: FindQuery['sort'],
  indexed: ReadonlySet<string> = NO_INDEXES,
  arrayFree: ReadonlySet<string> = NO_INDEXES,
): CompiledSql {
  if (sort.length === 0) throw new Error('compileSort needs at least one key');
  return join(
    sort.map(([path, direction]) => {
      if (direction !== 1 && direction !== -1) throw new Error(`bad sort direction ${String(direction)}`);
      return sql`${sortExpression(path, direction, indexed, arrayFree)} ${raw(direction === 1 ? 'ASC' : 'DESC')}`;
    }),
    ', ',
  );
}

/**
 * The rows strictly after `position` in `sort` (a cursor page), over the very expressions
 * `compileSort` orders by, so the condition is exact (MongoDB's order, whatever the types) and
 * its leading bound lets the planner seek into the sort index instead of walking up to the
 * position: `k1 >= v1 AND (k1 > v1 OR (k1 = v1 AND (k2 > v2 OR …)))` (`<` when descending).
 * SQLite does not bound an index by a row value over expressions, hence the expansion.
 */
export function compileKeyset(
  sort: FindQuery['sort'],
  position: SortPosition,
  indexed: ReadonlySet<string> = NO_INDEXES,
  arrayFree: ReadonlySet<string> = NO_INDEXES,
): CompiledSql {
  if (sort.length === 0 || sort.at(-1)![0] !== '_id' || position.keys.length !== sort.length - 1) {
    throw new Error('compileKeyset: the position does not fit the sort');
  }
  const terms = sort.map(([path, direction], i) => {
    const key = path === '_id' ? position.id : position.keys[i]!;
    const column = COLUMNS.get(path);
    let value: CompiledSql;
    if (column) {
      if (typeof key !== (column.type === 'text' ? 'string' : 'number')) {
        // A metadata value is always of its column's type; another type is a forged cursor.
        throw new Error(`compileKeyset: a ${column.type} key is needed for ${path}`);
      }
      value = param(key as string | number);
    } else {
      value = param(scalarSortKey(key));
    }
    return { expr: sortExpression(path, direction, indexed, arrayFree), value, direction };
  });
  // Iterative from the last key, so the nesting is built without recursion.
  let after: CompiledSql | undefined;
  for (let i = terms.length - 1; i >= 0; i--) {
    const { expr, value, direction } = terms[i]!;
    const strict = sql`${expr} ${raw(direction === 1 ? '>' : '<')} ${value}`;
    after = after === undefined ? strict : sql`(${strict} OR (${expr} = ${value} AND ${after}))`;
  }
  const first = terms[0]!;
  if (terms.length === 1) return after!;
  return sql`${first.expr} ${raw(first.direction === 1 ? '>=' : '<=')} ${first.value} AND ${after!}`;
}

/**
 * The SQL sort key of one path: the metadata column; the declared sort index's expression
 * when it gives MongoDB's order for this direction (always ascending — the index holds the
 * ascending key; descending only while the path holds no array, when both keys are equal);
 * otherwise `folio_sort_key` for the direction, with the path bound as parameters.
 */
function sortExpression(
  path: string,
  direction: 1 | -1,
  indexed: ReadonlySet<string>,
  arrayFree: ReadonlySet<string>,
): CompiledSql {
  const column = COLUMNS.get(path);
  if (column) return raw(column.sql);
  if (indexed.has(path) && (direction === 1 || arrayFree.has(path))) return raw(sortKeySql(path, 'd.body'));
  const segments = path.split('.');
  // The function gets only the first field's JSON (`->`), not the whole document.
  return sql`folio_sort_key(d.body -> ${param(`$${label(segments[0]!)}`)}, ${param(JSON.stringify(segments))}, ${param(direction)})`;
}
