/**
 * Version history: list, read one, diff two. Restore is a write and lives in documents.ts.
 * Under a key's document rule (keyAccess.ts) a document outside the rule has no history to that
 * key (404, as if it did not exist), and a version whose content is outside it cannot be read
 * or diffed (404 "Version not found."): a draft never reaches a key that sees only what is
 * published. The list shows every version's metadata of a document in view: numbers, times and
 * operations, no content.
 */
import fastJsonPatch from 'fast-json-patch';
import { invalidQuery, notFound, planFeatureUnavailable } from '../errors.js';
import type { FolioDocument, JsonValue, Store, VersionInfo } from '../store/port.js';
import type { KeyContext } from './context.js';
import { userFields } from './documentRules.js';
import { type CollectionAccess, inView } from './keyAccess.js';

export type DiffChange =
  | { path: string; type: 'changed'; from: JsonValue; to: JsonValue }
  | { path: string; type: 'added' | 'removed'; value: JsonValue };

export interface VersionDiff {
  from: number;
  to: number;
  changes: DiffChange[];
}

/** `/address/city` → `address.city`; array indexes stay numbers (`tags.0`). */
function dotPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function valueAt(doc: JsonValue, pointer: string): JsonValue {
  return fastJsonPatch.getValueByPointer(doc, pointer) as JsonValue;
}

/**
 * Field-level changes between two documents' user fields; metadata is left out because it
 * changes on every version and says nothing about content.
 */
export function diffDocuments(before: FolioDocument, after: FolioDocument): DiffChange[] {
  const a = userFields(before).fields;
  const b = userFields(after).fields;
  return fastJsonPatch.compare(a, b).map((op): DiffChange => {
    const path = dotPath(op.path);
    if (op.op === 'add') return { path, type: 'added', value: op.value as JsonValue };
    if (op.op === 'remove') return { path, type: 'removed', value: valueAt(a, op.path) };
    return { path, type: 'changed', from: valueAt(a, op.path), to: valueAt(b, op.path) };
  });
}

/** A version number from the URL: a positive integer, else 400 naming the parameter. */
export function parseVersionNumber(param: string, raw: string | undefined): number {
  if (raw === undefined || !/^[1-9]\d{0,14}$/.test(raw)) {
    throw invalidQuery(param, 'must be a positive integer version number');
  }
  return Number(raw);
}

export class VersionService {
  constructor(private readonly store: Store) {}

  async list(ctx: KeyContext, collection: string, id: string): Promise<VersionInfo[]> {
    const reach = ctx.access.collection(collection);
    await this.#assertDocumentInView(ctx, reach, collection, id);
    const versions = await this.store.documents.listVersions(ctx.scope, collection, id);
    if (versions.length === 0) throw notFound('Document');
    return versions;
  }

  async get(ctx: KeyContext, collection: string, id: string, version: number): Promise<FolioDocument> {
    const reach = ctx.access.collection(collection);
    await this.#assertDocumentInView(ctx, reach, collection, id);
    return this.#version(ctx, reach, collection, id, version);
  }

  async #version(
    ctx: KeyContext,
    reach: CollectionAccess,
    collection: string,
    id: string,
    version: number,
  ): Promise<FolioDocument> {
    const doc = await this.store.documents.getVersion(ctx.scope, collection, id, version);
    if (!doc || !inView(reach, doc)) throw notFound('Version');
    return doc;
  }

  /** Under a rule's filter: the current document must be in view, else 404 as for none. */
  async #assertDocumentInView(
    ctx: KeyContext,
    reach: CollectionAccess,
    collection: string,
    id: string,
  ): Promise<void> {
    if (reach.filter === null) return;
    const current = await this.store.documents.get(ctx.scope, collection, id);
    if (!current || !inView(reach, current)) throw notFound('Document');
  }

  async diff(
    ctx: KeyContext,
    collection: string,
    id: string,
    from: number,
    to: number,
  ): Promise<VersionDiff> {
    if (!ctx.limits.versionDiff) throw planFeatureUnavailable('Version diff', ctx.plan);
    const reach = ctx.access.collection(collection);
    await this.#assertDocumentInView(ctx, reach, collection, id);
    const [before, after] = await Promise.all([
      this.#version(ctx, reach, collection, id, from),
      this.#version(ctx, reach, collection, id, to),
    ]);
    return { from, to, changes: diffDocuments(before, after) };
  }
}
