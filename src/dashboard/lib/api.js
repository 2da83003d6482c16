/**
 * Every call the dashboard makes: same-origin fetch with the session cookie, the CSRF token on
 * state-changing requests, and one error type carrying what Folio answered (status, code,
 * message, details, request id) so pages can show it as it is.
 */
let csrfToken = '';
let sessionLost = () => {};

export function setCsrfToken(token) {
  csrfToken = token || '';
}

/** The header a state-changing request made without api() (an upload) must send. */
export function csrfHeader() {
  return { 'X-CSRF-Token': csrfToken };
}

/** Called when a request that needs the session gets 401 (expired, or logged out elsewhere). */
export function onSessionLost(handler) {
  sessionLost = handler;
}

export class ApiError extends Error {
  constructor(status, code, message, details, requestId) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
  }
}

const SAFE = new Set(['GET', 'HEAD']);

/** `options`: body (JSON-encoded unless a string), contentType, headers, quiet401. */
export async function api(method, path, options = {}) {
  const headers = { Accept: 'application/json', ...options.headers };
  if (!SAFE.has(method)) headers['X-CSRF-Token'] = csrfToken;
  const init = { method, headers, credentials: 'same-origin' };
  if (options.body !== undefined) {
    init.body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['Content-Type'] = options.contentType ?? 'application/json';
  }
  return readResponse(await send(path, init), options);
}

/** Waits this long at most for a rate-limit window to pass before giving the 429 to the page. */
const MAX_RETRY_WAIT_S = 3;
const RATE_LIMIT_RETRIES = 2;

/**
 * fetch, waiting out short rate-limit refusals: Folio counts the dashboard's requests against the
 * plan's per-second rate, and a page that loads several things at once may meet it. A 429 is
 * refused before anything happens, so any method may be sent again after `Retry-After`.
 */
export async function send(path, init) {
  for (let attempt = 0; ; attempt++) {
    let response;
    try {
      response = await fetch(path, init);
    } catch (error) {
      if (init.signal?.aborted) throw error;
      throw new ApiError(0, 'network_error', `Folio could not be reached (${error.message}).`);
    }
    const wait = Number(response.headers.get('Retry-After'));
    if (response.status !== 429 || attempt >= RATE_LIMIT_RETRIES || !(wait > 0 && wait <= MAX_RETRY_WAIT_S)) {
      return response;
    }
    await new Promise((resolve) => setTimeout(resolve, wait * 1000));
  }
}

/** Turns a fetch Response into `{status, data, headers}`, or throws ApiError for 4xx/5xx. */
export async function readResponse(response, options = {}) {
  const text = await response.text();
  let data = null;
  if (text && (response.headers.get('Content-Type') ?? '').includes('json')) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = data?.error;
    const failure = new ApiError(
      response.status,
      error?.code ?? `http_${response.status}`,
      error?.message ?? `Folio answered ${response.status} ${response.statusText}.`,
      error?.details,
      response.headers.get('X-Request-Id'),
    );
    if (response.status === 401 && !options.quiet401) sessionLost(failure);
    throw failure;
  }
  return { status: response.status, data, headers: response.headers };
}

const part = (value) => encodeURIComponent(value);

/** Session-authenticated data routes: the data API under /api/data/{env}. */
export function dataPath(env, project, collection, ...rest) {
  const tail = rest.map((segment) => `/${part(segment)}`).join('');
  return `/api/data/${part(env)}/${part(project)}/${part(collection)}${tail}`;
}

export const session = {
  current: () => api('GET', '/api/auth/session', { quiet401: true }),
  login: (email, password) => api('POST', '/api/auth/login', { body: { email, password }, quiet401: true }),
  signup: (email, password) => api('POST', '/api/auth/signup', { body: { email, password } }),
  logout: () => api('POST', '/api/auth/logout', { quiet401: true }),
};

export const projects = {
  list: () => api('GET', '/api/projects'),
  create: (name) => api('POST', '/api/projects', { body: { name } }),
  setOrigins: (id, allowedOrigins) => api('PATCH', `/api/projects/${part(id)}`, { body: { allowedOrigins } }),
  setAutoIndexes: (id, autoIndexes) => api('PATCH', `/api/projects/${part(id)}`, { body: { autoIndexes } }),
  collections: (id, env) => api('GET', `/api/projects/${part(id)}/collections?env=${part(env)}`),
};

export const keys = {
  list: (project) => api('GET', `/api/keys?project=${part(project)}`),
  create: (input) => api('POST', '/api/keys', { body: input }),
  rotate: (id) => api('POST', `/api/keys/${part(id)}/rotate`),
  setRules: (id, rules) => api('PATCH', `/api/keys/${part(id)}`, { body: { rules } }),
  revoke: (id) => api('DELETE', `/api/keys/${part(id)}`),
};

export const plans = {
  list: () => api('GET', '/api/plans'),
  change: (plan) => api('PATCH', '/api/account', { body: { plan } }),
};
