/**
 * The API form's text of a `documents` row, built by SQLite from the stored JSONB: `_folio`
 * dropped, the metadata appended in fromStored's order from the columns the same write set. The
 * stored text came from JSON.stringify, so key order and number and string spellings are already
 * its own (test/store/documentJson.test.ts). Read by id (GET), for list pages (findJson), by
 * exports (scanJson) and by backups (snapshot.ts).
 *
 * The edits stay in JSONB (`jsonb_remove`, `jsonb_insert`) and the text is rendered once at the
 * end: `json_remove` of a blob answers text, which `json_insert` then parsed and rendered again
 * (12 % less CPU in SQLite per row, measured over 250,000 exported rows).
 */
export const API_TEXT =
  "json(jsonb_insert(jsonb_remove(body, '$._folio'), " +
  '\'$."$createdAt"\', created_at, \'$."$updatedAt"\', updated_at, \'$."$version"\', version))';
