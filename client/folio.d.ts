/**
 * The types of folio.js. Written by hand for the library's own API; every request and answer
 * body, query parameter and error is taken from the generated folioApi.d.ts, so they follow the
 * OpenAPI document (`npm run client:generate`) and cannot drift from it.
 */
import type { components, operations } from './folioApi.js';

type Schemas = components['schemas'];
type Query<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;

/** Anything a document may hold (user fields); the managed fields come with `Stored`. */
export type Fields = Record<string, unknown>;

/** The managed fields every stored document carries (the API's `Document`). */
export type Managed = Pick<Schemas['Document'], '_id' | '$createdAt' | '$updatedAt' | '$version'>;

/** A document as Folio answers it: its fields and the managed ones. */
export type Stored<T> = T & Managed;

/** Filters, combined with AND: `{ field: value }` or `{ field: { op: value } }`; `in` takes an array. */
export type Filter = NonNullable<Query<'listDocuments'>['filter']>;

/** A field name, or `-` and a field name for descending order (dot notation for nested fields). */
export type SortField = string;

export interface ListOptions<T> {
  filter?: Filter;
  /** One field or several, each `-`-prefixed for descending (`'-stars'`, `['-stars', 'title']`). */
  sort?: SortField | SortField[];
  /** The fields to return (`_id` always comes); managed fields only when named. */
  select?: (keyof Stored<T> & string)[];
  limit?: Query<'listDocuments'>['limit'];
  offset?: Query<'listDocuments'>['offset'];
  /** The cursor of the page before (`meta.next`). Not with `offset`. */
  after?: Query<'listDocuments'>['after'];
  total?: Query<'listDocuments'>['total'];
}

/** A page of a listing: `meta.next` is the cursor of the next page, null after the last. */
export interface Page<D> {
  data: D[];
  meta: Schemas['DocumentList']['meta'];
}

/** A listed document with `select`: `_id` and the selected fields only. */
export type Selected<T, K extends keyof Stored<T>> = Pick<Stored<T>, K> & { _id: string };

/** RFC 7396 merge patch: the fields to set, `null` removing one. */
export type MergePatch<T> = { [K in keyof T]?: T[K] | null } & Fields;

export type JsonPatch = Schemas['JsonPatch'];

export interface WriteOptions {
  /** Write only if the document is at this `$version` (`If-Match`), or exists at all (`'*'`); else 412. */
  ifVersion?: number | '*';
  /** Retry this write after a 429's `Retry-After` (writes are not retried by default). */
  retry?: boolean;
}

export interface DeleteOptions extends WriteOptions {
  /** Erase the document and its history now instead of moving it to the trash. */
  purge?: boolean;
}

/** An operation of `bulk()`: each as its own request would be (PATCH is a merge patch). */
export type BulkOperation<T> =
  | { method: 'POST'; id?: string; body: T & { _id?: string } }
  | { method: 'PUT'; id: string; body: T }
  | { method: 'PATCH'; id: string; body: MergePatch<T> }
  | { method: 'DELETE'; id: string };

export type Format = 'json' | 'ndjson' | 'csv';

export interface ImportOptions extends Pick<Query<'importDocuments'>, 'onConflict' | 'idField'> {
  /** Of a string body: default NDJSON when it starts with `{`, else CSV. An array is JSON. */
  format?: Format;
  retry?: boolean;
}

export interface ExportOptions {
  /** Default `json`. */
  format?: Format;
  filter?: Filter;
  sort?: SortField | SortField[];
  /** CSV only: `false` leaves cells starting with `=`, `+`, `-`, `@` as stored. */
  formulaEscape?: boolean;
}

/** `removed`: under a key's rules, an update took a document the key could see out of its view. */
export type ChangeType = 'created' | 'updated' | 'deleted' | 'removed';

interface ChangeBase {
  /** The event's opaque id (`evt_...`). */
  id: string;
  /** When it was committed (ISO 8601). */
  timestamp: string;
  collection: string;
  /** The project's name. */
  project: string;
}

/** One change of a collection, as its stream sends it. */
export type ChangeEvent<T> =
  | (ChangeBase & {
      event: 'document.created' | 'document.updated' | 'document.deleted';
      /** The document at that version; for a delete, as it was just before. */
      document: Stored<T>;
    })
  | (ChangeBase & {
      /** The document left the key's view (docs/keys.md): drop it; its new content is not sent. */
      event: 'document.removed';
      document: { _id: string };
    });

export interface SubscribeOptions {
  /** Default all four. */
  events?: ChangeType[];
  /** The listing's filter language, matched against each event's document. */
  filter?: Filter;
}

/** Why events were lost (`stream.reset`, or a 410 on reconnection). */
export interface ResetInfo {
  reason: 'expired' | 'invalidated' | 'unknown' | (string & {});
  message: string;
}

export interface SubscribeHandlers {
  /** Events were lost: re-read what you show. The stream goes on from now. */
  onReset?: (info: ResetInfo) => void;
  /** The stream stopped for good (a revoked key, a plan without streams...). Default: console.error. */
  onError?: (error: FolioError) => void;
}

export interface Collection<T extends object = Fields> {
  create(document: T & { _id?: string }, options?: Pick<WriteOptions, 'retry'>): Promise<Stored<T>>;
  get(id: string): Promise<Stored<T>>;
  /** Creates the document when it is missing. */
  replace(id: string, document: T, options?: WriteOptions): Promise<Stored<T>>;
  patch(id: string, changes: MergePatch<T>, options?: WriteOptions): Promise<Stored<T>>;
  jsonPatch(id: string, operations: JsonPatch, options?: WriteOptions): Promise<Stored<T>>;
  delete(id: string, options?: DeleteOptions): Promise<void>;
  list<K extends keyof Stored<T> & string>(
    options: ListOptions<T> & { select: K[] },
  ): Promise<Page<Selected<T, K>>>;
  list(options?: ListOptions<T> & { select?: undefined }): Promise<Page<Stored<T>>>;
  count(options?: { filter?: Filter }): Promise<number>;
  /** Every matching document, fetching page after page through the cursor. */
  iterate(options?: Omit<ListOptions<T>, 'offset' | 'select'>): AsyncIterableIterator<Stored<T>>;
  /** The document's history, newest first. */
  versions(id: string): Promise<Schemas['VersionRecord'][]>;
  version(id: string, version: number): Promise<Stored<T>>;
  diff(id: string, from: number, to: number): Promise<Schemas['VersionDiff']>;
  /** Restores `version` as a new version. */
  restore(id: string, version: number, options?: WriteOptions): Promise<Stored<T>>;
  bulk(operations: BulkOperation<T>[], options?: Pick<WriteOptions, 'retry'>): Promise<Schemas['BulkResult']>;
  /** Records as an array (JSON) or a string of NDJSON or CSV. */
  import(
    records: (T & { _id?: string })[] | string,
    options?: ImportOptions,
  ): Promise<Schemas['ImportResult']>;
  /** The matching documents as a byte stream, read as it comes. */
  export(options?: ExportOptions): Promise<ReadableStream<Uint8Array>>;
  /** Calls `onEvent` for each change, once and in order, until the returned function is called. */
  subscribe(
    options: SubscribeOptions,
    onEvent: (event: ChangeEvent<T>) => void,
    handlers?: SubscribeHandlers,
  ): () => void;
}

export interface RetryOptions {
  /** Retries of one request after a 429 (default 3). */
  attempts?: number;
  /** A longer `Retry-After` is not waited for: the 429 is thrown (default 10,000). */
  maxWaitMs?: number;
  /** Retry writes too (default false: reads only). */
  writes?: boolean;
}

export interface ClientOptions {
  /** Where Folio answers, e.g. `https://folio.example` (no trailing path). */
  baseUrl: string;
  /** An API key of the project (a read-only key in a browser page, unless its origin is allowed). */
  key?: string;
  /** 429 handling; `false`: never retry. */
  retry?: RetryOptions | false;
}

export interface FolioClient {
  project(name: string): { collection<T extends object = Fields>(name: string): Collection<T> };
}

export function createClient(options: ClientOptions): FolioClient;

/** Every error answer of the API. */
export class FolioError extends Error {
  readonly status: number;
  /** Stable snake_case code (`not_found`, `version_conflict`, `rate_limited`...). */
  readonly code: Schemas['Error']['error']['code'];
  readonly details: Schemas['Error']['error']['details'];
  /** The answer's `X-Request-Id`, for the server's logs. */
  readonly requestId: string | null;
}
