/**
 * `POST /{ns}/{collection}/_bulk`: several document operations in one request. Not atomic as a
 * whole: each operation runs alone, in request order, through the same service call as its
 * single-operation endpoint (so the same status, version record and event), and a failure is
 * reported in its result without stopping the others.
 *
 * The next operation starts as soon as this one has made its commit (a commit is applied after
 * the `durable: false` ones made before it: CommitOptions), unless it writes a document an
 * earlier one is still writing, in which case it waits for that one. Operations on different
 * documents thus share the embedded store's group commit, applied and published in request
 * order; one transaction per operation took twice the time. The operations reach the disk
 * together, with one sync, before the answer.
 */
import { z } from 'zod';
import { AppError, badRequest, planLimitExceeded, uniqueViolation } from '../errors.js';
import { type JsonObject, type Store, UniqueIndexConflictError } from '../store/port.js';
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
  ) {}

  async run(ctx: KeyContext, collection: string, body: unknown): Promise<BulkResult> {
    const operations = parseBulkEnvelope(body);
    const max = ctx.limits.maxBulkOperations;
    if (operations.length > max) throw planLimitExceeded('bulkOperations', max, ctx.plan);
    const results = await this.#inOrder(ctx, collection, operations);
    const succeeded = results.filter((r) => r.ok).length;
    return { results, summary: { total: results.length, succeeded, failed: results.length - succeeded } };
  }

  /** Each operation's result, in request order; one sync for them all. */
  async #inOrder(ctx: KeyContext, collection: string, operations: BulkOperation[]): Promise<BulkItem[]> {
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
        let markCommitted = () => {};
        const committed = new Promise<void>((resolve) => {
          markCommitted = resolve;
        });
        // The last one's commit is durable: its sync carries the earlier ones too, so the sync
        // below has nothing left to do unless an earlier one committed after it (a lost race).
        const last = i === operations.length - 1;
        const documents = this.documents.onCommit(markCommitted, last);
        const settled = this.#one(ctx, collection, operation, documents).then(
          (item) => {
            results[i] = item;
          },
          (error: unknown) => {
            failures.push(error);
          },
        );
        running.push(settled);
        if (id !== null) lastOn.set(id, settled);
        // The next one starts once this one has made its commit (the next commit is then applied
        // after it, in the same group when it can), or once it is over.
        await Promise.race([committed, settled]);
      }
      await Promise.all(running);
    } finally {
      // Every commit on disk before the answer, also after an operation threw (nothing is
      // answered then, but what was applied must not wait for another write to reach the disk).
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
