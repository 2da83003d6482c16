/**
 * Where a document's current version lives on SQLite (schema 9): in its `documents` row, with the
 * operation and key hint that made it, while `versions` holds the versions before it
 * (documents.ts). A row without an operation is from before that layout (or a restore):
 * `versions` holds its current version too, so every reader takes the current version from the
 * row only where HOLDS_CURRENT_VERSION says, and historyLayout.ts moves such rows after start-up.
 */
import { API_TEXT } from './apiText.js';

/** A `documents` row holds its current version's history entry (its operation is set). */
export const HOLDS_CURRENT_VERSION = 'operation IS NOT NULL';

/**
 * A `documents` row's current version as the columns of a history row (`versions`,
 * `trash_versions`): scope, collection, doc_id, version, operation, timestamp, api_key_hint, body.
 */
export const CURRENT_VERSION_ROW = `scope, collection, id, version, operation, updated_at, api_key_hint, ${API_TEXT}`;
