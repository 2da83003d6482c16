/**
 * A `documents` row's body and the API form's text of it.
 *
 * Rows written by this version (`api_form` 1) hold the API form itself as JSONB: the user's
 * fields, then `$createdAt`, `$updatedAt` and `$version`, in fromStored's order, so the API text
 * is `json(body)`, rendered once. Rows written before it (`api_form` 0) hold the stored form of
 * storedForm.ts (metadata under `_folio`): their text drops `_folio` and appends the metadata
 * from the columns the same write set; storedForms.ts rewrites them in
 * chunks after start-up. Building the text from the `_folio` form was 445–465 ms over 250,000
 * rows against 252–255 for `json(body)`: over half an export's time went to it.
 *
 * The stored text came from JSON.stringify, so key order and number and string spellings are
 * already its own (test/store/documentJson.test.ts). Read, parsed, by `get`, finds and scans;
 * as text by exports (scanJson) and backups (snapshot.ts).
 * Columns are named bare: every statement reading it reads one table.
 */
/**
 * The body to store for a write: the API form's text `json`, its metadata moved last in
 * fromStored's order (whatever order the text gave them), as JSONB. The four arguments are SQL
 * expressions (placeholders). The edits stay in JSONB: the text is parsed once and never
 * rendered (3.0–3.3 µs a document against 4.0–4.8 for the `_folio` form, which parsed and
 * rendered it three times).
 */
export function storedBodySql(json: string, createdAt: string, updatedAt: string, version: string): string {
  const metadata = `'$."$createdAt"', '$."$updatedAt"', '$."$version"'`;
  return metadataLast(`jsonb_remove(jsonb(${json}), ${metadata})`, createdAt, updatedAt, version);
}

/** The keys JSON.stringify writes last, in fromStored's order, for the stored body as it is. */
const METADATA_KEYS = ['$createdAt', '$updatedAt', '$version'] as const;

/**
 * Whether `document`'s text ends with its metadata in fromStored's order, as every document the
 * services build does: it is then stored as `jsonb(text)`, without storedBodySql's two JSONB
 * edits (store CPU of an import 16.6–19.1 → 15.7–16.2 µs a document, first quartiles).
 */
export function metadataIsLast(document: object): boolean {
  const keys = Object.keys(document);
  const first = keys.length - METADATA_KEYS.length;
  return first >= 0 && METADATA_KEYS.every((key, i) => keys[first + i] === key);
}

/** The body of a row in the `_folio` form (`api_form` 0), in the API form: what conversion writes. */
export const CONVERTED_BODY = metadataLast(
  "jsonb_remove(body, '$._folio')",
  'created_at',
  'updated_at',
  'version',
);

/** `body` (JSONB without metadata) with the metadata appended in fromStored's order. */
function metadataLast(body: string, createdAt: string, updatedAt: string, version: string): string {
  return (
    `jsonb_insert(${body}, '$."$createdAt"', ${createdAt}, '$."$updatedAt"', ${updatedAt}, ` +
    `'$."$version"', CAST(${version} AS INTEGER))`
  );
}

export const API_TEXT = `CASE api_form WHEN 1 THEN json(body) ELSE json(${CONVERTED_BODY}) END`;
