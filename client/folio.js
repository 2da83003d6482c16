/**
 * Folio's client library: documents, queries and live changes of a Folio server, for Node 20+
 * and browsers. Plain ES module JavaScript with no dependency beyond `fetch` and `EventSource`,
 * so a page imports it by URL (`/dashboard/client/folio.js`) with no build step; its types are
 * folio.d.ts, whose request and response types come from the generated folioApi.d.ts.
 *
 *   import { createClient } from './client/folio.js';
 *   const folio = createClient({ baseUrl: 'http://localhost:3000', key });
 *   const posts = folio.project('blog').collection('posts');
 *   await posts.create({ title: 'hello' });
 *   const page = await posts.list({ filter: { stars: { gte: 3 } }, sort: '-stars', limit: 10 });
 *
 * docs/client.md has the common tasks.
 */
import { subscribeChanges } from './changes.js';
import { send } from './http.js';

export { FolioError } from './http.js';

/** 429 retries: how many, and the longest `Retry-After` worth waiting for. */
const DEFAULT_RETRY = { attempts: 3, maxWaitMs: 10_000, writes: false };

/** The media type of each import and export format. */
const FORMATS = { json: 'application/json', csv: 'text/csv', ndjson: 'application/x-ndjson' };

export function createClient({ baseUrl, key, retry } = {}) {
  if (typeof baseUrl !== 'string') throw new TypeError('createClient: baseUrl is required');
  const http = {
    base: baseUrl.replace(/\/+$/, ''),
    key,
    retry: retry === false ? { ...DEFAULT_RETRY, attempts: 0 } : { ...DEFAULT_RETRY, ...retry },
  };
  return {
    project: (project) => ({ collection: (name) => new Collection(http, project, name) }),
  };
}

/** `If-Match` for `ifVersion`: a version number is quoted (`"3"`); `*` is any version. */
function ifMatch(options) {
  const version = options?.ifVersion;
  if (version === undefined) return undefined;
  return { 'If-Match': version === '*' ? '*' : `"${version}"` };
}

/** The listing's query parameters from the library's list options (`select` and `sort` lists). */
function listQuery({ filter, sort, select, limit, offset, after, total } = {}) {
  return { filter, sort, select, limit, offset, after, total };
}

class Collection {
  #http;
  #path;

  constructor(http, project, name) {
    this.#http = http;
    this.#path = `/${encodeURIComponent(project)}/${encodeURIComponent(name)}`;
  }

  async #json(method, path, options) {
    const res = await send(this.#http, method, `${this.#path}${path}`, options);
    return res.status === 204 ? undefined : res.json();
  }

  #write(method, path, body, options, type) {
    return this.#json(method, path, { body, type, headers: ifMatch(options), retry: options?.retry });
  }

  #doc(id) {
    return `/${encodeURIComponent(id)}`;
  }

  create(document, options) {
    return this.#write('POST', '', document, options);
  }

  get(id) {
    return this.#json('GET', this.#doc(id));
  }

  replace(id, document, options) {
    return this.#write('PUT', this.#doc(id), document, options);
  }

  /** RFC 7396: fields merge in, `null` removes one. */
  patch(id, changes, options) {
    return this.#write('PATCH', this.#doc(id), changes, options, 'application/merge-patch+json');
  }

  /** RFC 6902: operations applied in order, all or none. */
  jsonPatch(id, operations, options) {
    return this.#write('PATCH', this.#doc(id), operations, options, 'application/json-patch+json');
  }

  delete(id, options) {
    const query = options?.purge ? { purge: 'true' } : undefined;
    return this.#json('DELETE', this.#doc(id), { query, headers: ifMatch(options), retry: options?.retry });
  }

  list(options) {
    return this.#json('GET', '', { query: listQuery(options) });
  }

  async count(options) {
    const { count } = await this.#json('GET', '', { query: { filter: options?.filter, count: 'true' } });
    return count;
  }

  /** Every matching document, a page at a time through the cursor (`meta.next`). */
  async *iterate(options = {}) {
    let after = options.after;
    for (;;) {
      const page = await this.list({ ...options, after, offset: undefined, total: options.total ?? 'none' });
      yield* page.data;
      if (!page.meta.next) return;
      after = page.meta.next;
    }
  }

  async versions(id) {
    return (await this.#json('GET', `${this.#doc(id)}/versions`)).versions;
  }

  version(id, version) {
    return this.#json('GET', `${this.#doc(id)}/versions/${encodeURIComponent(version)}`);
  }

  diff(id, from, to) {
    return this.#json('GET', `${this.#doc(id)}/versions/diff`, { query: { from, to } });
  }

  restore(id, version, options) {
    return this.#write(
      'POST',
      `${this.#doc(id)}/versions/${encodeURIComponent(version)}/restore`,
      undefined,
      options,
    );
  }

  /** Several operations, each alone and in order: one result each (`ok`, `status`, `_id`). */
  bulk(operations, options) {
    return this.#write('POST', '/_bulk', { operations }, options);
  }

  /**
   * Records as an array (JSON) or a string: NDJSON when it starts with `{`, else CSV, unless
   * `format` says.
   */
  import(records, options = {}) {
    const format =
      options.format ??
      (typeof records !== 'string' ? 'json' : records.trimStart().startsWith('{') ? 'ndjson' : 'csv');
    const query = { onConflict: options.onConflict, idField: options.idField };
    return this.#json('POST', '/_import', {
      query,
      body: records,
      type: FORMATS[format],
      retry: options.retry,
    });
  }

  /** The matching documents as a byte stream in `format` (JSON by default), read as it comes. */
  async export(options = {}) {
    const { format = 'json', filter, sort, formulaEscape } = options;
    const query = {
      filter,
      sort,
      formulaEscape: formulaEscape === undefined ? undefined : String(formulaEscape),
    };
    const res = await send(this.#http, 'GET', `${this.#path}/_export`, { query, accept: FORMATS[format] });
    return res.body;
  }

  /** Live changes (changes.js): returns the function that stops them. */
  subscribe(options, onEvent, handlers) {
    return subscribeChanges(this.#http, this.#path, options ?? {}, onEvent, handlers ?? {});
  }
}
