/**
 * `POST /{ns}/{collection}/_bulk`: several document operations in one request. Not atomic as a
 * whole: each operation runs alone, in request order, through the same service call as its
 * single-operation endpoint (so the same status, version record and event), and a failure is
 * reported in its result without stopping the others. The operations reach the disk together,
 * with one sync, before the answer.
 *
 * First, the whole request in one commit: each operation runs through the same service call,
 * in request order, against a planning view of the documents (the store's, as the earlier
 * operations of the request leave them), which records its write instead of committing it;
 * then every recorded write is committed at once, with its sync. An operation that fails in
 * planning is that item's error and records nothing, as when run alone. If that commit cannot
 * be made as planned (another writer changed one of the documents since it was read, or a
 * unique index refuses a write: it then writes nothing at all), or the request is larger than
 * an import batch (`imports.batchDocuments` / `imports.batchBytes`), the operations run one by
 * one as below. For 100 operations (bench/transfer.ts) the request in one commit took 6.8–7.7
 * ms of server CPU against 9.3–10.3 ms one by one (four transactions, 100 savepoints).
 *
 * One by one, without one transaction per operation: the next operation starts as soon as
 * this one's commit has its place in the store's order (CommitOptions.queued), unless it writes
 * a document an earlier one is still writing, in which case it waits for that one. Operations
 * on different documents thus share a group's transaction (each in its own savepoint), applied
 * and published in request order; one transaction per operation was most of a bulk's time.
 */
import { z } from 'zod';
import type { Config } from '../config/schema.js';
import { AppError, badRequest, planLimitExceeded, uniqueViolation } from '../errors.js';
import {
  type CommitOptions,
  type CommitResult,
  type DataScope,
  type DocumentRepository,
  type DocumentWrite,
  type FolioDocument,
  type JsonObject,
  type Store,
  UniqueIndexConflictError,
} from '../store/port.js';
import { writeId } from '../store/writeConditions.js';
import type { KeyContext } from './context.js';
import { assertBodyIdMatches, isJsonObject, MAX_DEPTH, nestsDeeperThan } from './documentRules.js';
import type { DocumentService } from './documents.js';

const operationSchema = z.strictObject({
  method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE']),
  id: z.string().optional(),
  body: z.unknown().optional(),
});
export const bulkEnvelopeSchema = z.strictObject({ operations: z.array(operationSchema).min(1) });

export type BulkOperation = z.infer<typeof operationSchema>;

export type BulkItem =
  | { status: number; _id: string; ok: true }
  | { status: number; ok: false; _id?: string; error: { code: string; message: string } };

export interface BulkResult {
  results: BulkItem[];
  summary: { total: number; succeeded: number; failed: number };
}

/** The envelope, or 400 naming the first problem (`operations.3.method: ...`). */
export function parseBulkEnvelope(body: unknown): BulkOperation[] {
  const parsed = bulkEnvelopeSchema.safeParse(body);
  if (parsed.success) return parsed.data.operations;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') ?? '';
  throw badRequest(
    `Bulk body must be {"operations":[{"method","id"?,"body"?},...]}: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}.`,
    field ? { field } : undefined,
  );
}

type Outcome = { status: number; id: string };

export class BulkService {
  /**
   * `documents` commits without waiting for the disk (`durable: false`); `run` syncs once at
   * the end, before it answers. Each operation still sees the ones before it, and its events
   * are published once it is on disk.
   */
  constructor(
    private readonly documents: DocumentService,
    private readonly store: Store,
    private readonly config: Config,
  ) {}

  async run(ctx: KeyContext, collection: string, body: unknown): Promise<BulkResult> {
    const operations = parseBulkEnvelope(body);
    const max = ctx.limits.maxBulkOperations;
    if (operations.length > max) throw planLimitExceeded('bulkOperations', max, ctx.plan);
    const results =
      (await this.#inOneCommit(ctx, collection, operations)) ??
      (await this.#oneByOne(ctx, collection, operations));
    const succeeded = results.filter((r) => r.ok).length;
    return { results, summary: { total: results.length, succeeded, failed: results.length - succeeded } };
  }

  /**
   * Every operation planned in request order, then committed together (durably): the results,
   * or null when nothing was written and the operations must run one by one instead.
   */
  async #inOneCommit(
    ctx: KeyContext,
    collection: string,
    operations: BulkOperation[],
  ): Promise<BulkItem[] | null> {
    const { batchDocuments, batchBytes } = this.config.imports;
    if (operations.length > batchDocuments) return null;
    const plan = new PlanningView(this.store.documents, ctx.scope, collection);
    await plan.readAhead(operations.map(targetId).filter((id) => id !== null));
    const documents = this.documents.over(plan.repository);
    const results: BulkItem[] = [];
    for (const operation of operations) {
      results.push(await this.#one(ctx, collection, operation, documents));
    }
    if (plan.writes.length === 0) return results;
    if (plan.bytes() > batchBytes) return null;
    let committed: CommitResult;
    try {
      committed = await this.store.documents.commit(ctx.scope, collection, plan.writes, { durable: true });
    } catch (error) {
      // The commit was refused as a whole: the operations one by one say which one it was.
      if (error instanceof UniqueIndexConflictError) return null;
      throw error;
    }
    return committed.ok ? results : null;
  }

  async #oneByOne(ctx: KeyContext, collection: string, operations: BulkOperation[]): Promise<BulkItem[]> {
    const results: BulkItem[] = new Array(operations.length);
    const running: Array<Promise<void>> = [];
    /** The last operation started on each document id, until it has settled. */
    const lastOn = new Map<string, Promise<void>>();
    /** An operation that threw something other than an AppError: the request fails with it. */
    const failures: unknown[] = [];
    try {
      for (const [i, operation] of operations.entries()) {
        // An operation on a document an earlier one still writes waits for it: it reads what
        // that one wrote.
        const id = targetId(operation);
        const earlier = id === null ? undefined : lastOn.get(id);
        if (earlier) await earlier;
        if (failures.length > 0) break;
        let markQueued = () => {};
        const queued = new Promise<void>((resolve) => {
          markQueued = resolve;
        });
        const settled = this.#one(
          ctx,
          collection,
          operation,
          this.documents.withCommitQueued(markQueued),
        ).then(
          (item) => {
            results[i] = item;
          },
          (error: unknown) => {
            failures.push(error);
          },
        );
        running.push(settled);
        if (id !== null) lastOn.set(id, settled);
        // The next one starts once this one's commit has its place in the store's order (its
        // commit then lands after this one's, in the same group when it can), or once it is over.
        await Promise.race([queued, settled]);
      }
      await Promise.all(running);
    } finally {
      // One sync for the whole request, also after an operation threw (nothing is answered
      // then, but what was applied must not wait for another write to reach the disk).
      await this.store.documents.sync();
    }
    if (failures.length > 0) throw failures[0];
    return results;
  }

  async #one(
    ctx: KeyContext,
    collection: string,
    op: BulkOperation,
    documents: DocumentService,
  ): Promise<BulkItem> {
    try {
      const { status, id } = await this.#apply(ctx, collection, op, documents);
      return { status, _id: id, ok: true };
    } catch (caught) {
      // Each operation stands alone: a unique index refusing one is that item's 409.
      const error =
        caught instanceof UniqueIndexConflictError
          ? uniqueViolation(caught.index, caught.conflictingId)
          : caught;
      if (!(error instanceof AppError)) throw error;
      return {
        status: error.status,
        ok: false,
        ...(op.id === undefined ? {} : { _id: op.id }),
        error: { code: error.code, message: error.message },
      };
    }
  }

  /** The same calls and statuses as POST, PUT, PATCH (merge patch) and DELETE on their own. */
  async #apply(
    ctx: KeyContext,
    collection: string,
    op: BulkOperation,
    documents: DocumentService,
  ): Promise<Outcome> {
    // The request's body was not held to a depth as a whole (each operation stands alone):
    // this one's is, before any code walks it.
    if (nestsDeeperThan(op.body, MAX_DEPTH)) {
      throw badRequest(`Document nests deeper than ${MAX_DEPTH} levels.`, { maxDepth: MAX_DEPTH });
    }
    if (op.method === 'POST') {
      const doc = await documents.create(ctx, collection, withId(op.body, op.id));
      return { status: 201, id: doc._id };
    }
    if (op.id === undefined) throw badRequest(`${op.method} needs the id of the document.`, { field: 'id' });
    switch (op.method) {
      case 'PUT': {
        const { created } = await documents.replace(ctx, collection, op.id, op.body);
        return { status: created ? 201 : 200, id: op.id };
      }
      case 'PATCH':
        await documents.patch(ctx, collection, op.id, 'merge', op.body);
        return { status: 200, id: op.id };
      case 'DELETE':
        if (op.body !== undefined) throw badRequest('DELETE takes no body.', { field: 'body' });
        await documents.delete(ctx, collection, op.id);
        return { status: 204, id: op.id };
    }
  }
}

/** The document an operation writes, when known before it runs (a POST without one: a new id). */
function targetId(op: BulkOperation): string | null {
  if (op.id !== undefined) return op.id;
  if (op.method === 'POST' && isJsonObject(op.body) && typeof op.body._id === 'string') return op.body._id;
  return null;
}

/** A POST's `id` is its document's `_id`; one in the body too must agree. */
function withId(body: unknown, id: string | undefined): unknown {
  if (id === undefined || !isJsonObject(body)) return body;
  assertBodyIdMatches(body._id, id);
  const copy: JsonObject = { ...body };
  copy._id = id;
  return copy;
}

/**
 * The documents as a bulk request's earlier operations leave them, for planning the next: reads
 * come from what the request wrote so far, else from the store; a commit is checked against
 * that state (as the store would) and recorded, not made. Services treat documents as values
 * (never changed in place), so the planned ones are kept as they are.
 */
class PlanningView {
  readonly writes: DocumentWrite[] = [];
  readonly #state = new Map<string, FolioDocument | null>();
  /**
   * Every id the operations name was read ahead: an id a write creates without having read it
   * is then one the service made up (a POST without an id), taken as new without a read. Should
   * it exist after all, the store's commit refuses the whole plan and the operations run one by
   * one, which report it.
   */
  #namedRead = false;
  readonly repository: DocumentRepository;

  constructor(
    private readonly documents: DocumentRepository,
    private readonly scope: DataScope,
    private readonly collection: string,
  ) {
    const get = (scope: DataScope, collection: string, id: string) => this.#get(scope, collection, id);
    const commit = (
      scope: DataScope,
      collection: string,
      writes: DocumentWrite[],
      options?: CommitOptions,
    ): Promise<CommitResult> => this.#commit(scope, collection, writes, options);
    this.repository = new Proxy(documents, {
      get: (target, name) => {
        if (name === 'get') return get;
        if (name === 'commit') return commit;
        // Anything else a service might use: only reads by id and commits are planned.
        if (name === 'getJson' || name === 'getVersion' || name === 'getMany') return undefined;
        const value: unknown = Reflect.get(target, name, target);
        // Called on the store's repository itself (its private state is not the proxy's).
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /**
   * The current documents of `ids` (those the operations name), read together when the store
   * can (DocumentRepository.getMany), so planning reads none of them one by one.
   */
  async readAhead(ids: string[]): Promise<void> {
    if (!this.documents.getMany || ids.length === 0) return;
    const found = await this.documents.getMany(this.scope, this.collection, ids);
    for (const id of ids) this.#state.set(id, found.get(id) ?? null);
    this.#namedRead = true;
  }

  /** UTF-8 bytes of the planned documents' JSON (what an import batch is sized by). */
  bytes(): number {
    let total = 0;
    for (const write of this.writes) {
      if (write.kind === 'put') total += Buffer.byteLength(write.json ?? JSON.stringify(write.document));
    }
    return total;
  }

  #sameTarget(scope: DataScope, collection: string): void {
    if (scope !== this.scope || collection !== this.collection)
      throw new TypeError('a bulk request plans writes to its own collection only');
  }

  async #get(scope: DataScope, collection: string, id: string): Promise<FolioDocument | null> {
    this.#sameTarget(scope, collection);
    if (this.#state.has(id)) return this.#state.get(id) ?? null;
    const found = await this.documents.get(scope, collection, id);
    this.#state.set(id, found);
    return found;
  }

  async #commit(
    scope: DataScope,
    collection: string,
    writes: DocumentWrite[],
    options?: CommitOptions,
  ): Promise<CommitResult> {
    this.#sameTarget(scope, collection);
    for (const write of writes) {
      const id = writeId(write);
      const current =
        this.#state.has(id) || (this.#namedRead && write.expectedVersion === 0)
          ? this.#state.get(id)
          : await this.#get(scope, collection, id);
      const version = current?.$version ?? 0;
      if (version !== write.expectedVersion || (write.kind === 'delete' && !current))
        return { ok: false, conflicts: [{ id, currentVersion: current?.$version ?? null }] };
    }
    for (const write of writes) {
      this.#state.set(writeId(write), write.kind === 'put' ? write.document : null);
      this.writes.push(write);
    }
    options?.queued?.();
    return { ok: true };
  }
}
