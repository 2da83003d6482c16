/**
 * The life of a document: create, read, replace, patch, delete, restore. Every write is a
 * read-modify-commit loop conditioned on the `$version` read, so concurrent writers never lose
 * each other's changes; with `If-Match` the client's version is the condition and a mismatch is
 * a 412 instead of a retry.
 */
import type { Config } from '../config/schema.js';
import { AppError, badRequest, conflict, notFound, outsideRules, versionMismatch } from '../errors.js';
import type {
  CommitOptions,
  CommitResult,
  DeleteWrite,
  DocumentWrite,
  FolioDocument,
  JsonObject,
  JsonValue,
  PutWrite,
  Store,
  WriteOperation,
} from '../store/port.js';
import type { KeyContext } from './context.js';
import {
  assertBodyIdMatches,
  assertDocumentId,
  assertMeasuredSize,
  isJsonObject,
  userFields,
} from './documentRules.js';
import { buildDocument, newDocumentId, putWrite } from './documentWrites.js';
import { inView } from './keyAccess.js';
import { applyJsonPatch, applyMergePatch } from './patches.js';
import type { SchemaService } from './schemas/index.js';
import { trashStampOf } from './trash/retention.js';

/** Above this many lost races in a row the write gives up with a 409 (never silently). */
export const MAX_ATTEMPTS = 200;

export type PatchKind = 'merge' | 'json';

/** `If-Match: "3"` (also `W/"3"` and bare `3`); `*` means "any existing version". */
export type Precondition =
  | { kind: 'version'; version: number; raw: string }
  | { kind: 'exists'; raw: string };

export function parseIfMatch(header: string | undefined): Precondition | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const raw = header.trim();
  if (raw === '*') return { kind: 'exists', raw };
  const match = /^(?:W\/)?"?(\d{1,15})"?$/.exec(raw);
  if (!match)
    throw new AppError(400, 'invalid_header', 'If-Match must be an ETag like "3" (the document $version).');
  return { kind: 'version', version: Number(match[1]), raw };
}

interface Mutation {
  fields: JsonObject;
  operation: WriteOperation;
}

interface DocumentServiceOptions {
  durable?: boolean;
  schemas?: SchemaService;
  nowMs?: () => number;
  /** Called as soon as each commit has been made, before it resolves: see `onCommit`. */
  committed?: () => void;
}

export class DocumentService {
  readonly #commitOptions: CommitOptions;
  readonly #schemas: SchemaService | null;
  readonly #nowMs: () => number;
  readonly #options: DocumentServiceOptions;

  /**
   * `durable: false` (the bulk service's own instance): commits may answer before they reach
   * the disk; whoever uses it calls `store.documents.sync()` before acknowledging anything.
   */
  constructor(
    private readonly store: Store,
    private readonly config: Config,
    options: DocumentServiceOptions = {},
  ) {
    this.#options = options;
    this.#commitOptions = { durable: options.durable ?? true };
    this.#schemas = options.schemas ?? null;
    this.#nowMs = options.nowMs ?? Date.now;
  }

  /**
   * The same service calling `committed` as soon as each of its commits has been made (one bulk
   * operation: with `durable: false`, the next may start then and its commit lands after it),
   * and durable or not as `durable` says.
   */
  onCommit(committed: () => void, durable: boolean): DocumentService {
    return new DocumentService(this.store, this.config, { ...this.#options, committed, durable });
  }

  /** A document outside the key's rules reads as missing: 404, never a hint that it exists. */
  async get(ctx: KeyContext, collection: string, id: string): Promise<FolioDocument> {
    const doc = await this.store.documents.get(ctx.scope, collection, id);
    if (!doc || !inView(ctx.access.collection(collection), doc)) throw notFound('Document');
    return doc;
  }

  /** POST: a new document; `_id` in the body is honoured (409 if taken), else generated. */
  async create(ctx: KeyContext, collection: string, body: unknown): Promise<FolioDocument> {
    const { fields, id: bodyId } = userFields(body);
    const id = newDocumentId(bodyId);
    const doc = buildDocument(id, fields, null);
    if (!inView(ctx.access.collection(collection), doc)) throw outsideRules(collection);
    const write = this.#measuredWrite(ctx, doc, 0, 'create');
    await this.#schemas?.check(ctx, collection, fields);
    const result = await this.#commit(ctx, collection, write);
    if (!result.ok) throw conflict(`A document with _id "${id}" already exists.`, { _id: id });
    return doc;
  }

  /** PUT: replace, or create when missing (then `created` is true). */
  async replace(
    ctx: KeyContext,
    collection: string,
    id: string,
    body: unknown,
    precondition?: Precondition,
  ): Promise<{ doc: FolioDocument; created: boolean }> {
    assertDocumentId(id);
    const { fields, id: bodyId } = userFields(body);
    assertBodyIdMatches(bodyId, id);
    const doc = await this.mutate(ctx, collection, id, precondition, (current) => ({
      fields,
      operation: current ? 'update' : 'create',
    }));
    return { doc, created: doc.$version === 1 };
  }

  async patch(
    ctx: KeyContext,
    collection: string,
    id: string,
    kind: PatchKind,
    patch: unknown,
    precondition?: Precondition,
  ): Promise<FolioDocument> {
    if (kind === 'merge' && !isJsonObject(patch)) throw badRequest('A merge patch must be a JSON object.');
    return this.mutate(ctx, collection, id, precondition, (current) => {
      if (!current) throw notFound('Document');
      const next: JsonValue =
        kind === 'merge'
          ? applyMergePatch(current, patch as JsonObject)
          : applyJsonPatch(current, patch, this.config.documents.maxBytes);
      const { fields, id: bodyId } = userFields(next, 'The patched document');
      assertBodyIdMatches(bodyId, id);
      return { fields, operation: 'patch' };
    });
  }

  /** Restore version N: a new version with N's content; history is never rewritten. */
  async restore(
    ctx: KeyContext,
    collection: string,
    id: string,
    version: number,
    precondition?: Precondition,
  ): Promise<FolioDocument> {
    const old = await this.store.documents.getVersion(ctx.scope, collection, id, version);
    if (!old) throw notFound('Version');
    const { fields } = userFields(old);
    return this.mutate(ctx, collection, id, precondition, (current) => {
      if (!current) throw notFound('Document');
      return { fields, operation: 'restore' };
    });
  }

  /**
   * DELETE: the document and its history move to the collection's trash for the plan's
   * retention; with `purge` (or a plan keeping no trash) they are erased at once.
   */
  async delete(
    ctx: KeyContext,
    collection: string,
    id: string,
    precondition?: Precondition,
    options: { purge?: boolean } = {},
  ): Promise<void> {
    const reach = ctx.access.collection(collection);
    for (let attempt = 1; ; attempt++) {
      const current = await this.store.documents.get(ctx.scope, collection, id);
      if (!current || !inView(reach, current)) throw notFound('Document');
      checkPrecondition(precondition, current);
      const trash = options.purge ? undefined : trashStampOf(ctx, this.#nowMs());
      const write: DeleteWrite = { kind: 'delete', id, expectedVersion: current.$version };
      if (trash) write.trash = trash;
      else if (options.purge) write.erase = true;
      const result = await this.#commit(ctx, collection, write);
      if (result.ok) return;
      this.onLostRace(precondition, attempt, result.conflicts[0]?.currentVersion ?? null);
    }
  }

  /**
   * Read the current document, compute the next one, commit it conditioned on the version read;
   * on a lost race read again and recompute. The key's rules must see the document before (404
   * otherwise, as if it did not exist) and after (403 `outside_rules`), so no write moves a
   * document into or out of its view.
   */
  private async mutate(
    ctx: KeyContext,
    collection: string,
    id: string,
    precondition: Precondition | undefined,
    next: (current: FolioDocument | null) => Mutation,
  ): Promise<FolioDocument> {
    const reach = ctx.access.collection(collection);
    for (let attempt = 1; ; attempt++) {
      const current = await this.store.documents.get(ctx.scope, collection, id);
      if (current && !inView(reach, current)) throw notFound('Document');
      checkPrecondition(precondition, current);
      const { fields, operation } = next(current);
      const doc = buildDocument(id, fields, current);
      if (!inView(reach, doc)) throw outsideRules(collection);
      const write = this.#measuredWrite(ctx, doc, current?.$version ?? 0, operation);
      // The resulting document, whatever the write (replace, either patch, restore).
      await this.#schemas?.check(ctx, collection, fields);
      const result = await this.#commit(ctx, collection, write);
      if (result.ok) return doc;
      this.onLostRace(precondition, attempt, result.conflicts[0]?.currentVersion ?? null);
    }
  }

  /** The store commit; once it is made, its place in the store's order is taken (`committed`). */
  #commit(ctx: KeyContext, collection: string, write: DocumentWrite): Promise<CommitResult> {
    const result = this.store.documents.commit(ctx.scope, collection, [write], this.#commitOptions);
    this.#options.committed?.();
    return result;
  }

  /**
   * The store write for `doc`, held to the size limits (413) by its JSON text, which goes to the
   * store with it: the document is serialised once for both.
   */
  #measuredWrite(
    ctx: KeyContext,
    doc: FolioDocument,
    expectedVersion: number,
    operation: WriteOperation,
  ): PutWrite {
    const json = JSON.stringify(doc);
    assertMeasuredSize(Buffer.byteLength(json), () => doc, this.config.documents);
    return { ...putWrite(ctx, doc, expectedVersion, operation), json };
  }

  private onLostRace(precondition: Precondition | undefined, attempt: number, current: number | null): void {
    if (precondition) throw versionMismatch(precondition.raw, current);
    if (attempt >= MAX_ATTEMPTS) {
      throw new AppError(409, 'write_conflict', 'The document is changing too fast; retry the request.');
    }
  }
}

function checkPrecondition(precondition: Precondition | undefined, current: FolioDocument | null): void {
  if (!precondition) return;
  const matches =
    precondition.kind === 'exists' ? current !== null : current?.$version === precondition.version;
  if (!matches) throw versionMismatch(precondition.raw, current?.$version ?? null);
}
