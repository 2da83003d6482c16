/**
 * `POST /{ns}/{collection}/_import`. Two passes over the body:
 *
 * 1. Read: parse every record, check it against the document rules and the plan, and spool the
 *    valid ones (in memory up to `imports.spoolMemoryBytes`, else to a temporary file). Nothing is written yet, so every refusal of the whole
 *    import (413 size, 403 document count, 400 unreadable body, 409 `onConflict=fail` meeting
 *    taken ids) leaves the collection untouched, and a client that disconnects while uploading
 *    changes nothing.
 * 2. Write: commit the spooled records in input order, in batches (`imports.batchDocuments` /
 *    `imports.batchBytes`). Each batch is one store commit: its documents, version records and
 *    change events land together or not at all. If the store fails mid-way the batches before
 *    are in, the rest are not, and the answer (503 `import_interrupted`) says where to resume.
 *    Batches commit without waiting for the disk, with one sync per SYNC_EVERY_BATCHES and one
 *    before the answer; their events are published once they are on disk.
 */
import type { Config } from '../../config/schema.js';
import { AppError, conflict, outsideRules } from '../../errors.js';
import type { TransferFormat } from '../../formats/formats.js';
import type { DataScope, DocumentWrite, Store } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import { assertMeasuredSize } from '../documentRules.js';
import { MAX_ATTEMPTS } from '../documents.js';
import { buildDocument, type CurrentVersion, putWrite } from '../documentWrites.js';
import { inView, withinView } from '../keyAccess.js';
import type { SchemaService } from '../schemas/index.js';
import {
  decideAction,
  type ImportError,
  type ImportOptions,
  importError,
  largestDocumentBytes,
  type PreparedRecord,
  prepareRecord,
} from './importRules.js';
import { ImportSlots } from './importSlots.js';
import { importTooLarge, readImportBody } from './importSource.js';
import { removeLeftoverSpools, Spool, type SpooledRecord } from './spool.js';

export interface ImportResult {
  imported: number;
  skipped: number;
  errors: ImportError[];
  total: number;
}

/** Taken ids named in a 409: enough to act on, never a huge body. */
const MAX_CONFLICT_IDS_LISTED = 100;
/**
 * Batches committed between two syncs. Each batch is still one transaction (all of it or none
 * of it, after any crash, and what is in is always a prefix of whole batches: the WAL keeps
 * commit order); committing it without its own sync took an import of 25,000 documents from 50
 * syncs to 5, where the syncs were most of its time. Its events wait for the sync.
 */
const SYNC_EVERY_BATCHES = 10;
/** Ids per look-up when checking which already exist. */
const ID_LOOKUP_CHUNK = 500;

/** The store failed mid-way; `cause` is kept for the log, never shown to the client. */
export class ImportInterrupted extends AppError {
  constructor(
    progress: ImportResult & { resumeAt: number },
    override readonly cause: unknown,
  ) {
    super(
      503,
      'import_interrupted',
      `The import stopped at record ${progress.resumeAt}: records before it are settled (see details), ` +
        'none from it on were written. Send the records from resumeAt again, or the whole body with onConflict=skip.',
      // Errors of later records (found while reading) are left to the re-sent part to report.
      {
        ...progress,
        errors: progress.errors.filter((e) => e.index < progress.resumeAt).map((e) => ({ ...e })),
      },
    );
  }
}

export class ImportService {
  readonly #slots: ImportSlots;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly schemas: SchemaService | null = null,
  ) {
    this.#slots = new ImportSlots(store, config);
  }

  /** At start-up: the spools of imports a crashed process left behind (see spool.ts). */
  removeLeftoverSpools(): Promise<string[]> {
    return removeLeftoverSpools();
  }

  /** 413 before reading when the declared length is already over the plan. */
  assertDeclaredSize(ctx: KeyContext, contentLength: number | undefined): void {
    const max = ctx.limits.maxImportBytes;
    if (contentLength !== undefined && contentLength > max)
      throw importTooLarge(contentLength, max, ctx.plan);
  }

  async import(
    ctx: KeyContext,
    collection: string,
    format: TransferFormat,
    body: AsyncIterable<Uint8Array>,
    options: ImportOptions,
  ): Promise<ImportResult> {
    return this.#slots.run(ctx.key.id, async () => {
      const spool = new Spool(this.config.imports.spoolMemoryBytes);
      // However the request ends (answered, refused, failed, the client gone: reading its body
      // then throws), the spool goes with it.
      try {
        const read = await this.#read(ctx, collection, format, body, options, spool);
        return await this.#write(ctx, collection, options, spool, read);
      } finally {
        await spool.dispose();
      }
    });
  }

  /** Pass 1: everything is read and checked; valid records go to the spool. */
  async #read(
    ctx: KeyContext,
    collection: string,
    format: TransferFormat,
    body: AsyncIterable<Uint8Array>,
    options: ImportOptions,
    spool: Spool,
  ): Promise<ImportResult> {
    const errors: ImportError[] = [];
    // Ids from the records themselves: a re-run meets them again (generated ones it does not).
    const givenIds = new Set<string>();
    const repeated = new Set<string>();
    let total = 0;
    const maxDocumentBytes = this.config.documents.maxBytes;
    const reach = ctx.access.collection(collection);
    for await (const record of readImportBody(body, format, {
      maxBytes: ctx.limits.maxImportBytes,
      maxRecords: ctx.limits.maxImportDocuments,
      plan: ctx.plan,
      maxRecordChars: maxDocumentBytes * 2,
    })) {
      total += 1;
      if (record.error) {
        errors.push(importError(record, record.error.code, record.error.message));
        continue;
      }
      let prepared: PreparedRecord;
      let fieldsJson: string;
      try {
        prepared = prepareRecord(record.value, options.idField);
        // Serialised once: measured here and spooled as is.
        fieldsJson = JSON.stringify(prepared.fields);
        // Checked now, so that a too-large record is known before anything is written, at the
        // largest version number there can be: pass 2 need not measure it again.
        const { id, fields } = prepared;
        assertMeasuredSize(
          largestDocumentBytes(id, fieldsJson),
          () => ({ ...buildDocument(id, fields, null), $version: Number.MAX_SAFE_INTEGER }),
          this.config.documents,
        );
        // A record the collection's schema refuses is that record's error; the rest go on.
        await this.schemas?.check(ctx, collection, prepared.fields);
        // So is one the key's rule would not let it see: it cannot write it either.
        if (!inView(reach, prepared.fields)) throw outsideRules(collection);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        errors.push(importError(record, error.code, error.message));
        continue;
      }
      if (prepared.given) {
        if (givenIds.has(prepared.id)) repeated.add(prepared.id);
        givenIds.add(prepared.id);
      }
      await spool.append(record.index, record.line, prepared.id, prepared.given, prepared.fields, fieldsJson);
    }
    if (options.onConflict === 'fail') {
      const taken = [...repeated, ...(await this.#existing(ctx.scope, collection, givenIds))];
      if (taken.length > 0) throw takenIds(taken);
    }
    return { imported: 0, skipped: 0, errors, total };
  }

  async #existing(scope: DataScope, collection: string, ids: Set<string>): Promise<string[]> {
    const found: string[] = [];
    const all = [...ids];
    for (let start = 0; start < all.length; start += ID_LOOKUP_CHUNK) {
      const current = await this.#current(scope, collection, all.slice(start, start + ID_LOOKUP_CHUNK));
      found.push(...current.keys());
    }
    return found;
  }

  /** Pass 2: the spooled records, committed batch by batch in input order. */
  async #write(
    ctx: KeyContext,
    collection: string,
    options: ImportOptions,
    spool: Spool,
    result: ImportResult,
  ): Promise<ImportResult> {
    const { batchDocuments, batchBytes } = this.config.imports;
    let batch: SpooledRecord[] = [];
    let bytes = 0;
    let unsynced = 0;
    /** Commits the batch; `next`: the index of the first record after it. */
    const flush = async (next: number) => {
      try {
        await this.#commitBatch(ctx, collection, options, batch, result);
      } catch (error) {
        // The batches before are committed: they reach the disk before the answer says so
        // (where the store can still sync at all).
        await this.#sync(result, batch[0]?.index ?? result.total).catch(() => {});
        if (error instanceof AppError && error.status < 500) throw error;
        throw new ImportInterrupted({ ...result, resumeAt: batch[0]?.index ?? result.total }, error);
      }
      batch = [];
      bytes = 0;
      unsynced += 1;
      if (unsynced >= SYNC_EVERY_BATCHES) {
        await this.#sync(result, next);
        unsynced = 0;
      }
    };
    for await (const record of spool.records()) {
      if (batch.length > 0 && (batch.length >= batchDocuments || bytes + record.bytes > batchBytes))
        await flush(record.index);
      batch.push(record);
      bytes += record.bytes;
    }
    if (batch.length > 0) await flush(result.total);
    // Nothing is answered before every batch is on disk.
    if (unsynced > 0) await this.#sync(result, result.total);
    result.errors.sort((a, b) => a.index - b.index);
    return result;
  }

  /** Every batch committed so far reaches the disk; `next`: the first record not committed. */
  async #sync(result: ImportResult, next: number): Promise<void> {
    try {
      await this.store.documents.sync();
    } catch (error) {
      throw new ImportInterrupted({ ...result, resumeAt: next }, error);
    }
  }

  /**
   * One batch, one commit. The batch is planned against the current versions of its ids; if
   * another writer changed one of them in between, the commit writes nothing and the batch is
   * planned again from fresh versions.
   */
  async #commitBatch(
    ctx: KeyContext,
    collection: string,
    options: ImportOptions,
    batch: SpooledRecord[],
    result: ImportResult,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      // An id Folio generated for a record names no document yet: only the records' own ids are
      // looked up (all of them again after a lost race, which the commit would have reported).
      const lookup = attempt === 1 ? batch.filter((r) => r.given) : batch;
      const state =
        lookup.length === 0
          ? new Map<string, CurrentVersion>()
          : await this.#current(
              ctx.scope,
              collection,
              lookup.map((r) => r.id),
            );
      const hidden = await this.#outOfView(ctx, collection, state);
      const writes: DocumentWrite[] = [];
      const outcome = { imported: 0, skipped: 0, errors: [] as ImportError[] };
      for (const record of batch) {
        const current = state.get(record.id) ?? null;
        if (hidden.has(record.id)) {
          // A document the key may not see is neither overwritten, skipped nor reported taken.
          const { code, message } = outsideRules(collection);
          outcome.errors.push(importError(record, code, message, record.id));
          continue;
        }
        const action = decideAction(options.onConflict, current !== null);
        if (action === 'skip') {
          outcome.skipped += 1;
          continue;
        }
        if (action === 'conflict') {
          outcome.errors.push(
            importError(record, 'conflict', `A document with _id "${record.id}" already exists.`, record.id),
          );
          continue;
        }
        // Its size was checked in pass 1 against the largest metadata it can get.
        const doc = buildDocument(record.id, record.fields, current);
        writes.push(putWrite(ctx, doc, current?.$version ?? 0, current ? 'update' : 'create'));
        state.set(record.id, doc);
        outcome.imported += 1;
      }
      // Without waiting for the disk: #write syncs every SYNC_EVERY_BATCHES batches and before
      // answering, and the batch's events are published only once it is on disk.
      const committed =
        writes.length === 0 ||
        (await this.store.documents.commit(ctx.scope, collection, writes, { durable: false })).ok;
      if (committed) {
        result.imported += outcome.imported;
        result.skipped += outcome.skipped;
        result.errors.push(...outcome.errors);
        return;
      }
      if (attempt >= MAX_ATTEMPTS) {
        throw new AppError(409, 'write_conflict', 'Documents of this import are changing too fast; retry.');
      }
    }
  }

  /**
   * Which of the existing documents in `state` a key's rule hides from it (none without a
   * filter): one more look-up per batch, for restricted keys only.
   */
  async #outOfView(
    ctx: KeyContext,
    collection: string,
    state: Map<string, CurrentVersion>,
  ): Promise<Set<string>> {
    const reach = ctx.access.collection(collection);
    if (reach.filter === null || state.size === 0) return new Set();
    const ids = [...state.keys()];
    const visible = await this.store.documents.find(ctx.scope, collection, {
      filter: withinView(reach, { _id: { $in: ids } }),
      sort: [],
      skip: 0,
      limit: 0,
      projection: ['_id'],
    });
    const seen = new Set(visible.map((doc) => doc._id));
    return new Set(ids.filter((id) => !seen.has(id)));
  }

  /** The current version of each of `ids` that exists. */
  async #current(scope: DataScope, collection: string, ids: string[]): Promise<Map<string, CurrentVersion>> {
    const found = await this.store.documents.find(scope, collection, {
      filter: { _id: { $in: ids } },
      sort: [],
      skip: 0,
      limit: 0,
      projection: ['_id', '_folio.version', '_folio.createdAt'],
    });
    return new Map(found.map((doc) => [doc._id, { $version: doc.$version, $createdAt: doc.$createdAt }]));
  }
}

function takenIds(ids: string[]): AppError {
  const listed = ids.slice(0, MAX_CONFLICT_IDS_LISTED);
  return conflict(
    `${ids.length} record id(s) are already taken (${listed.slice(0, 5).join(', ')}${ids.length > 5 ? ', ...' : ''}); ` +
      'nothing was imported. Use onConflict=skip or onConflict=overwrite to import anyway.',
    { ids: listed, count: ids.length },
  );
}
