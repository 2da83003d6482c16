/**
 * The document browser's form and the API's query string, both ways. The page keeps the API's
 * own parameters in its URL (`#/...?filter[age][gte]=18&sort=-age&limit=20`), so what the form
 * builds is exactly what `GET /{ns}/{collection}` would be sent, and the API's own answer (a 400
 * naming a bad parameter) is what the user sees.
 */
export const OPERATORS = [
  ['eq', 'equals'],
  ['neq', 'does not equal'],
  ['gt', 'greater than'],
  ['gte', 'greater or equal'],
  ['lt', 'less than'],
  ['lte', 'less or equal'],
  ['contains', 'contains (any case)'],
  ['in', 'is one of (a,b,c)'],
  ['exists', 'exists (true/false)'],
];

const FILTER_KEY = /^filter\[([^[\]]*)\](?:\[([^[\]]*)\])?$/;

export const PAGE_SIZES = [10, 20, 50, 100];
export const DEFAULT_LIMIT = 20;

/** The form's state from a query string. */
export function formFromQuery(query) {
  const rows = [];
  for (const [key, value] of query) {
    const match = FILTER_KEY.exec(key);
    if (match) rows.push({ field: match[1], op: match[2] ?? 'eq', value });
  }
  return {
    rows,
    sort: query.get('sort') ?? '',
    limit: Number(query.get('limit') ?? DEFAULT_LIMIT) || DEFAULT_LIMIT,
  };
}

/** The API query string for the form (offset 0: a new query starts at its first page). */
export function queryFromForm(form) {
  const query = new URLSearchParams();
  for (const row of form.rows) {
    const field = row.field.trim();
    if (!field) continue;
    query.append(row.op === 'eq' ? `filter[${field}]` : `filter[${field}][${row.op}]`, row.value);
  }
  if (form.sort.trim()) query.set('sort', form.sort.trim());
  if (form.limit !== DEFAULT_LIMIT) query.set('limit', String(form.limit));
  return query;
}

/** The same query at another offset. */
export function withOffset(query, offset) {
  const next = new URLSearchParams(query);
  if (offset > 0) next.set('offset', String(offset));
  else next.delete('offset');
  return next;
}

/** Readable form of a query string (brackets unescaped), for showing the API call. */
export function readableQuery(query) {
  const text = query.toString();
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}
