/** How values are shown. */

export function formatTime(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function formatBytes(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(bytes % (1024 * 1024) ? 1 : 0)} MiB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} B`;
}

export function formatNumber(n) {
  return typeof n === 'number' ? n.toLocaleString('en') : String(n);
}

/** The user fields of a document: without `_id` and the `$` metadata. */
export function userFields(doc) {
  const fields = {};
  for (const [name, value] of Object.entries(doc ?? {})) {
    if (name === '_id' || name.startsWith('$')) continue;
    // defineProperty: a field called __proto__ stays an ordinary field.
    Object.defineProperty(fields, name, { value, enumerable: true, writable: true, configurable: true });
  }
  return fields;
}

/** One line of JSON, cut at `max` characters. */
export function preview(value, max = 120) {
  const text = JSON.stringify(value) ?? '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

/**
 * The JSON a person typed: `{ok: true, value}`, or `{ok: false, error}` shaped like an API error
 * so the page shows it the same way.
 */
export function parseTypedJson(text) {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (failure) {
    return {
      ok: false,
      error: { status: 0, code: 'invalid_json', message: `This is not valid JSON: ${failure.message}` },
    };
  }
}
