/** The SELECT behind `find`, `scan` and `explain` (documents.ts), and how its rows read. */
import Database from 'better-sqlite3';
import { projectStored } from '../../documentQuery/projection.js';
import type { DataScope, FindQuery, FolioDocument } from '../../port.js';
import { fromStored, toStored } from '../../storedForm.js';
import { API_TEXT } from '../documents/apiText.js';
import { collectionMatch } from '../indexes/declaredIndexes.js';
import { scopeKeyOf } from '../layout/scopeKey.js';
import { compileFilter } from './compileFilter.js';
import { compileKeyset, compileSort } from './compileSort.js';
import { registerQueryFunctions } from './queryFunctions.js';
import type { SqlParam } from './sqlFragments.js';
import { BOUND_COUNT } from './sqlLimit.js';

/** The SELECT behind `find` and `scan`: filter, order (by `_id` when none), limit and skip. */
export function selectSql(
  scope: DataScope,
  collection: string,
  query: FindQuery,
  indexed: ReadonlySet<string>,
  /** Count the rows visited (`folio_examined()` sits before the filter, after the index constraints). */
  counted = false,
  /** Indexed paths without arrays now (EmbeddedIndexes.arrayFree); none on a scan's own connection. */
  arrayFree: ReadonlySet<string> = new Set(),
  /** What each row gives: the API text (readRow parses it), or another column. */
  select = API_TEXT,
): { sql: string; params: SqlParam[] } {
  // Literals for a collection with declarations: their indexes are partial (declaredIndexes.ts).
  const target = collectionMatch(scopeKeyOf(scope), collection, indexed);
  const where = compileFilter(query.filter, indexed, arrayFree, target.literal);
  const examined = counted ? 'folio_examined() AND ' : '';
  const order =
    query.sort.length > 0 ? compileSort(query.sort, indexed, arrayFree) : { sql: 'd.id', params: [] };
  // A cursor page: its position as a top-level condition, which the planner seeks to.
  const keyset =
    query.after && query.sort.length > 0
      ? compileKeyset(query.sort, query.after, indexed, arrayFree)
      : { sql: '1', params: [] };
  const sql =
    `SELECT ${select} AS body FROM documents d WHERE ${target.sql} AND ${keyset.sql} AND ${examined}(${where.sql}) ` +
    `ORDER BY ${order.sql} LIMIT ${BOUND_COUNT} OFFSET ${BOUND_COUNT}`;
  // MongoDB reads limit 0 as "no limit"; SQLite spells that -1.
  const limit = query.limit > 0 ? query.limit : -1;
  return {
    sql,
    params: [...target.params, ...keyset.params, ...where.params, ...order.params, limit, query.skip],
  };
}

/** A reader only waits while another connection recovers the WAL; as long as writers wait. */
const READER_BUSY_TIMEOUT_MS = 5000;

/** A row's API text as the document, or its projection (computed on the stored form's paths). */
export function readRow(text: string, projection: string[] | undefined): FolioDocument {
  const doc = JSON.parse(text) as FolioDocument;
  return projection ? fromStored(projectStored(toStored(doc), projection)) : doc;
}

/** A read-only connection to the same file, with the functions compiled queries call. */
export function openReader(file: string): Database.Database {
  const reader = new Database(file, { readonly: true, fileMustExist: true, timeout: READER_BUSY_TIMEOUT_MS });
  try {
    registerQueryFunctions(reader);
  } catch (error) {
    reader.close();
    throw error;
  }
  return reader;
}
