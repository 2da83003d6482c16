/**
 * The collection's trash (`/{ns}/{collection}/_trash`): what DELETE keeps for the plan's
 * retention (retention.ts), listed newest first, read with its history, restored as a new
 * version, or erased for good. Restoring writes one commit that puts the document back with its
 * history (continuous: the next `$version`, a version record of operation `restore`) and takes it
 * out of the trash; its change event is `document.created`.
 *
 * Under a key's document rule (keyAccess.ts) the key's trash holds only the entries whose last
 * content is inside the rule: the others are absent from the list and 404 to get, restore and
 * erase. The list filters the store's pages here, reading on until its page is full or it has
 * read TRASH_SCAN_MAX entries: then the page is shorter (even empty), and `next` goes on from
 * the last entry read, so one request's work stays bounded however much the rule hides.
 */

import type { Config } from '../../config/schema.js';
import { AppError, conflict, invalidQuery, notFound } from '../../errors.js';
import { isoNow } from '../../ids.js';
import type { FolioDocument, Store, TrashEntry, TrashPosition, VersionInfo } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import { userFields } from '../documentRules.js';
import { buildDocument, putWrite } from '../documentWrites.js';
import { type CollectionAccess, inView } from '../keyAccess.js';
import { parsePageQuery } from '../pageQuery.js';
import type { SchemaService } from '../schemas/index.js';

/** Entries read per store page while a rule's filter thins the trash list. */
const TRASH_SCAN_PAGE = 200;
/** Entries one list request reads at most under a rule's filter. */
export const TRASH_SCAN_MAX = 5 * TRASH_SCAN_PAGE;

/** Attempts of a restore that keeps meeting a changing trash entry. */
const MAX_RESTORE_ATTEMPTS = 5;

export interface TrashItem {
  _id: string;
  deletedAt: string;
  /** The hint of the key that deleted it. */
  deletedBy: string;
  expiresAt: string;
  /** The `$version` of its last version. */
  version: number;
  document: FolioDocument;
}

export interface TrashPage {
  data: TrashItem[];
  meta: { limit: number; hasMore: boolean; next: string | null };
}

export class TrashService {
  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly schemas: SchemaService | null,
    private readonly nowMs: () => number = Date.now,
  ) {}

  async list(ctx: KeyContext, collection: string, query: Record<string, unknown>): Promise<TrashPage> {
    const reach = ctx.access.collection(collection);
    const { limit, after } = parseListQuery(query, ctx.limits.maxPageSize);
    const { rows, readTo } = await this.#entriesInView(ctx, reach, collection, limit + 1, after);
    const page = rows.slice(0, limit);
    const last = rows.length > limit ? page.at(-1) : readTo;
    return {
      data: page.map(itemOf),
      meta: {
        limit,
        hasMore: last !== undefined,
        next: last ? encodeCursor({ deletedAt: last.deletedAt, id: last.id }) : null,
      },
    };
  }

  /**
   * Up to `wanted` entries after `after` that the key may see. A key without a filter reads one
   * page; with one, pages are read on until enough entries pass or TRASH_SCAN_MAX were read,
   * and then `readTo` is the last entry read, where the next page starts.
   */
  async #entriesInView(
    ctx: KeyContext,
    reach: CollectionAccess,
    collection: string,
    wanted: number,
    after: TrashPosition | undefined,
  ): Promise<{ rows: TrashEntry[]; readTo?: TrashPosition }> {
    const now = isoNow(this.nowMs());
    if (reach.filter === null)
      return { rows: await this.store.trash.list(ctx.scope, collection, { limit: wanted, now, after }) };
    const found: TrashEntry[] = [];
    let position = after;
    for (let read = 0; read < TRASH_SCAN_MAX; read += TRASH_SCAN_PAGE) {
      const rows = await this.store.trash.list(ctx.scope, collection, {
        limit: TRASH_SCAN_PAGE,
        now,
        after: position,
      });
      for (const row of rows) {
        if (inView(reach, row.document)) found.push(row);
        if (found.length === wanted) return { rows: found };
      }
      const last = rows.at(-1);
      if (rows.length < TRASH_SCAN_PAGE || !last) return { rows: found };
      position = { deletedAt: last.deletedAt, id: last.id };
    }
    return { rows: found, readTo: position };
  }

  async get(
    ctx: KeyContext,
    collection: string,
    id: string,
  ): Promise<TrashItem & { versions: VersionInfo[] }> {
    const reach = ctx.access.collection(collection);
    const now = isoNow(this.nowMs());
    const entry = await this.#entry(ctx, reach, collection, id, now);
    const versions = await this.store.trash.listVersions(ctx.scope, collection, id, now);
    return { ...itemOf(entry), versions };
  }

  /** The trash entry, when there is one the key may see; else 404. */
  async #entry(
    ctx: KeyContext,
    reach: CollectionAccess,
    collection: string,
    id: string,
    now: string,
  ): Promise<TrashEntry> {
    const entry = await this.store.trash.get(ctx.scope, collection, id, now);
    if (!entry || !inView(reach, entry.document)) throw notFound('Trashed document');
    return entry;
  }

  async restore(ctx: KeyContext, collection: string, id: string): Promise<FolioDocument> {
    const reach = ctx.access.collection(collection);
    for (let attempt = 1; ; attempt++) {
      const entry = await this.#entry(ctx, reach, collection, id, isoNow(this.nowMs()));
      const { fields } = userFields(entry.document);
      await this.schemas?.check(ctx, collection, fields);
      const doc = buildDocument(id, fields, entry.document, this.config.documents);
      const write = { ...putWrite(ctx, doc, 0, 'restore'), fromTrash: true };
      const result = await this.store.documents.commit(ctx.scope, collection, [write]);
      if (result.ok) return doc;
      if (result.conflicts[0]?.currentVersion != null) {
        throw conflict(
          `A document with _id "${id}" exists again; delete or rename it before restoring this one from the trash.`,
          { _id: id },
        );
      }
      // The entry changed in between (deleted again, purged): read it again.
      if (attempt >= MAX_RESTORE_ATTEMPTS)
        throw new AppError(409, 'write_conflict', 'The trashed document is changing too fast; retry.');
    }
  }

  async purge(ctx: KeyContext, collection: string, id: string): Promise<void> {
    const reach = ctx.access.collection(collection);
    if (reach.filter !== null) await this.#entry(ctx, reach, collection, id, isoNow(this.nowMs()));
    if (!(await this.store.trash.purge(ctx.scope, collection, id))) throw notFound('Trashed document');
  }
}

function itemOf(entry: TrashEntry): TrashItem {
  return {
    _id: entry.id,
    deletedAt: entry.deletedAt,
    deletedBy: entry.apiKeyHint,
    expiresAt: entry.expiresAt,
    version: entry.document.$version,
    document: entry.document,
  };
}

export function encodeCursor(position: TrashPosition): string {
  return Buffer.from(JSON.stringify([position.deletedAt, position.id])).toString('base64url');
}

export function decodeCursor(cursor: string): TrashPosition {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      parsed.length === 2 &&
      typeof parsed[0] === 'string' &&
      typeof parsed[1] === 'string'
    ) {
      return { deletedAt: parsed[0], id: parsed[1] };
    }
  } catch {
    // Answered below.
  }
  throw invalidQuery('after', 'must be the `next` of the previous page');
}

function parseListQuery(
  query: Record<string, unknown>,
  maxLimit: number,
): { limit: number; after: TrashPosition | undefined } {
  const { limit, after } = parsePageQuery(query, maxLimit);
  return { limit, after: after === undefined ? undefined : decodeCursor(after) };
}
