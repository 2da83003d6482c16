// Types of http.js's one export that the openapi-fetch client (index.ts) shares; the rest of
// http.js is internal to folio.js, whose public types are folio.d.ts.

/** Folio's query syntax (`filter[n][gte]=1`, lists comma-separated), with its leading `?`. */
export function queryString(query: Record<string, unknown> | undefined): string;
