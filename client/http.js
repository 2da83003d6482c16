/**
 * The library's HTTP: one request with 429 retries, Folio's error answers as FolioError, and
 * Folio's query-string syntax. Internal to the library (folio.js and changes.js).
 */

/** Every error answer of the API (and a stream that cannot go on) as one class. */
export class FolioError extends Error {
  /**
   * @param {number} status
   * @param {{ code: string, message: string, details?: Record<string, unknown> }} error
   * @param {string | null} requestId
   */
  constructor(status, error, requestId) {
    super(error.message);
    this.name = 'FolioError';
    this.status = status;
    this.code = error.code;
    this.details = error.details;
    this.requestId = requestId;
  }
}

/**
 * One request; the answer when it is a 2xx, else a FolioError. A 429 is retried after its
 * `Retry-After` for reads, and for writes only when asked (`retry`): a write may have been
 * refused after it was counted, and repeating it is the caller's choice.
 */
export async function send(http, method, path, options = {}) {
  const headers = { Accept: options.accept ?? 'application/json', ...options.headers };
  if (http.key) headers.Authorization = `Bearer ${http.key}`;
  let body;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['Content-Type'] = options.type ?? 'application/json';
  }
  const retries = options.retry ?? (method === 'GET' || http.retry.writes);
  const url = `${http.base}${path}${queryString(options.query)}`;
  for (let attempt = 0; ; attempt++) {
    const res = await fetch(url, { method, headers, body, signal: options.signal });
    if (res.status === 429 && retries && attempt < http.retry.attempts) {
      const wait = retryAfterMs(res, 1000);
      if (wait <= http.retry.maxWaitMs) {
        await res.body?.cancel();
        await sleep(wait, options.signal);
        continue;
      }
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }
}

/** The FolioError of a non-2xx answer (a body that is no Folio error still makes one). */
export async function errorOf(res) {
  const text = await res.text().catch(() => '');
  let error;
  try {
    error = JSON.parse(text).error;
  } catch {
    // Not JSON: a proxy's page, say.
  }
  if (!error || typeof error.code !== 'string')
    error = { code: `http_${res.status}`, message: text.slice(0, 200) || res.statusText };
  return new FolioError(res.status, error, res.headers.get('X-Request-Id'));
}

/** `Retry-After` in ms (seconds or an HTTP date), or `fallback` without one. */
export function retryAfterMs(res, fallback) {
  const value = res.headers.get('Retry-After');
  if (value === null) return fallback;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? fallback : Math.max(0, date - Date.now());
}

/** Resolves after `ms`, or at once when `signal` aborts (its listener removed either way). */
export function sleep(ms, signal) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, signal?.aborted ? 0 : ms);
    signal?.addEventListener('abort', done);
  });
}

/**
 * Folio's query syntax: `filter: { a: 'x', n: { gte: 1 }, t: { in: ['a', 'b'] } }` →
 * `filter[a]=x&filter[n][gte]=1&filter[t][in]=a,b`; arrays elsewhere (`sort`, `select`) are
 * comma-separated too. Names and values are percent-encoded, brackets kept. `?` included.
 */
export function queryString(query) {
  const parts = [];
  const add = (name, value) => {
    if (value === undefined || value === null) return;
    const text = Array.isArray(value) ? value.join(',') : String(value);
    parts.push(`${name}=${encodeURIComponent(text)}`);
  };
  for (const [name, value] of Object.entries(query ?? {})) {
    if (name !== 'filter' || value === undefined) {
      add(encodeURIComponent(name), value);
      continue;
    }
    for (const [field, condition] of Object.entries(value)) {
      const key = `filter[${encodeURIComponent(field)}]`;
      if (condition === null || typeof condition !== 'object' || Array.isArray(condition))
        add(key, condition);
      else
        for (const [op, operand] of Object.entries(condition))
          add(`${key}[${encodeURIComponent(op)}]`, operand);
    }
  }
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}
