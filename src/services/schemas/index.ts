/**
 * Collection schemas (`/{ns}/{collection}/_schema`): set, read, remove, and the check every
 * write path runs on the document's user fields before committing (`check`). In `enforce` mode a
 * violation is a 422 `schema_violation` and nothing is written; in `warn` mode the write goes
 * through, the violation is logged (paths and keywords only, never values) and counted.
 *
 * A collection's schema record is remembered for RECORD_TTL_MS (and forgotten at once by a change
 * made through this process), so a write does not pay a store read for it; another instance's
 * change reaches this one within that time.
 */
import type { Logger } from 'pino';
import { z } from 'zod';
import { AppError, notFound } from '../../errors.js';
import { isoNow, newId } from '../../ids.js';
import type {
  CollectionSchemaRecord,
  FolioDocument,
  JsonObject,
  JsonValue,
  SchemaMode,
  Store,
} from '../../store/port.js';
import type { KeyContext } from '../context.js';
import { userFields } from '../documentRules.js';
import { parsePageQuery } from '../pageQuery.js';
import { checkSchema } from './schemaRules.js';
import { CompiledSchemas, type SchemaViolation } from './validators.js';

export const RECORD_TTL_MS = 1000;
/** Collections whose schema record (or its absence) is remembered. */
const MAX_REMEMBERED = 10_000;
/** Documents one page of `violations` reads at most, so a page's work is bounded. */
export const MAX_SCANNED_PER_PAGE = 1000;

export const putSchemaBody = z.strictObject({
  schema: z.union([z.record(z.string(), z.unknown()), z.boolean()]).meta({
    description: 'A JSON Schema (draft 2020-12) for the user fields of every document.',
  }),
  mode: z
    .enum(['enforce', 'warn'])
    .default('enforce')
    .meta({ description: '`enforce` refuses violating writes (422); `warn` logs and counts them.' }),
});

export interface SchemaView {
  schema: JsonValue;
  mode: SchemaMode;
  revision: string;
  updatedAt: string;
}

export interface ViolationsPage {
  data: Array<{ _id: string; errors: SchemaViolation[] }>;
  meta: { scanned: number; hasMore: boolean; next: string | null };
}

export const schemaViolation = (violations: SchemaViolation[]) => {
  const first = violations[0];
  const where = first ? `${first.instancePath || '(document)'} ${first.message}` : 'invalid';
  return new AppError(
    422,
    'schema_violation',
    `The document does not match the collection's schema: ${where}.`,
    {
      errors: violations.map((v) => ({ ...v })),
    },
  );
};

interface Remembered {
  record: CollectionSchemaRecord | null;
  at: number;
}

export class SchemaService {
  readonly compiled = new CompiledSchemas();
  readonly #records = new Map<string, Remembered>();
  #onViolation: ((mode: SchemaMode) => void) | null = null;

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly nowMs: () => number = Date.now,
  ) {}

  /** Called once per violating write, with the mode that handled it (metrics). */
  onViolation(listener: (mode: SchemaMode) => void): void {
    this.#onViolation = listener;
  }

  async get(ctx: KeyContext, collection: string): Promise<SchemaView> {
    const record = await this.store.schemas.get(ctx.scope, collection);
    if (!record) throw notFound('Schema');
    return viewOf(record);
  }

  async set(ctx: KeyContext, collection: string, body: z.infer<typeof putSchemaBody>): Promise<SchemaView> {
    const text = checkSchema(body.schema);
    await this.#countChange(ctx);
    const record: CollectionSchemaRecord = {
      schema: text,
      mode: body.mode,
      revision: newId('sch'),
      updatedAt: isoNow(),
    };
    // Compiled before it is stored: a schema Ajv or RE2 refuses is a 400 and nothing changes.
    this.compiled.get(record.revision, text);
    await this.store.schemas.put(ctx.scope, collection, record);
    this.#records.delete(rememberKey(ctx, collection));
    return viewOf(record);
  }

  /**
   * Compiling costs up to a few hundred milliseconds of the process every tenant shares: a
   * project compiles at most its plan's `schemaChangesPerMinute` schemas (counted across
   * instances by the store's counters); past it, 429 until the minute is out.
   */
  async #countChange(ctx: KeyContext): Promise<void> {
    const max = ctx.limits.schemaChangesPerMinute;
    const now = this.nowMs();
    const { count, resetAtMs } = await this.store.counters.hit(
      `schema-changes:${ctx.scope.projectId}`,
      60_000,
      now,
    );
    if (count <= max) return;
    const retryAfter = Math.max(1, Math.ceil((resetAtMs - now) / 1000));
    throw new AppError(
      429,
      'rate_limited',
      `The ${ctx.plan} plan allows ${max} schema changes per minute per project; retry in ${retryAfter} s.`,
      { limit: 'schemaChangesPerMinute', max, plan: ctx.plan },
      { 'Retry-After': String(retryAfter) },
    );
  }

  async remove(ctx: KeyContext, collection: string): Promise<void> {
    const removed = await this.store.schemas.delete(ctx.scope, collection);
    this.#records.delete(rememberKey(ctx, collection));
    if (!removed) throw notFound('Schema');
  }

  /**
   * The write check: throws 422 when `fields` (a document's user fields) violate an enforced
   * schema; logs and counts under a warning one.
   */
  async check(ctx: KeyContext, collection: string, fields: JsonObject): Promise<void> {
    const record = await this.#record(ctx, collection);
    if (!record) return;
    const violations = this.compiled.get(record.revision, record.schema)(fields);
    if (violations.length === 0) return;
    this.#onViolation?.(record.mode);
    if (record.mode === 'enforce') throw schemaViolation(violations);
    this.logger.warn(
      {
        project: ctx.scope.projectId,
        collection,
        violations: violations.map((v) => ({ instancePath: v.instancePath, keyword: v.keyword })),
      },
      'schema violation allowed (warn mode)',
    );
  }

  /** Existing documents that would fail the schema, a bounded page at a time, in `_id` order. */
  async violations(
    ctx: KeyContext,
    collection: string,
    query: Record<string, unknown>,
  ): Promise<ViolationsPage> {
    const { limit, after } = parseViolationsQuery(query, ctx.limits.maxPageSize);
    const record = await this.store.schemas.get(ctx.scope, collection);
    if (!record) throw notFound('Schema');
    const validate = this.compiled.get(record.revision, record.schema);
    const data: ViolationsPage['data'] = [];
    let scanned = 0;
    let last: string | null = null;
    let exhausted = true;
    const documents = this.store.documents.scan(ctx.scope, collection, {
      filter: after === undefined ? {} : { _id: { $gt: after } },
      sort: [['_id', 1]],
      skip: 0,
      limit: MAX_SCANNED_PER_PAGE,
    });
    for await (const doc of documents) {
      scanned++;
      last = doc._id;
      const errors = validate(fieldsOf(doc));
      if (errors.length > 0) data.push({ _id: doc._id, errors });
      if (data.length >= limit || scanned >= MAX_SCANNED_PER_PAGE) {
        exhausted = false;
        break;
      }
    }
    return { data, meta: { scanned, hasMore: !exhausted, next: exhausted ? null : last } };
  }

  /** The schema of a collection for its OpenAPI description, or null. */
  async schemaOf(ctx: KeyContext, collection: string): Promise<JsonValue | null> {
    const record = await this.store.schemas.get(ctx.scope, collection);
    return record ? (JSON.parse(record.schema) as JsonValue) : null;
  }

  async #record(ctx: KeyContext, collection: string): Promise<CollectionSchemaRecord | null> {
    const key = rememberKey(ctx, collection);
    const now = this.nowMs();
    const known = this.#records.get(key);
    if (known && now - known.at < RECORD_TTL_MS) return known.record;
    const record = await this.store.schemas.get(ctx.scope, collection);
    if (this.#records.size >= MAX_REMEMBERED) this.#records.clear();
    this.#records.set(key, { record, at: now });
    return record;
  }
}

function rememberKey(ctx: KeyContext, collection: string): string {
  return JSON.stringify([ctx.scope.projectId, ctx.scope.env, collection]);
}

function viewOf(record: CollectionSchemaRecord): SchemaView {
  return {
    schema: JSON.parse(record.schema) as JsonValue,
    mode: record.mode,
    revision: record.revision,
    updatedAt: record.updatedAt,
  };
}

/** A stored document's user fields, as a write would have validated them. */
function fieldsOf(doc: FolioDocument): JsonObject {
  return userFields(doc).fields;
}

function parseViolationsQuery(
  query: Record<string, unknown>,
  maxLimit: number,
): { limit: number; after?: string } {
  const { limit, after } = parsePageQuery(query, maxLimit);
  return after === undefined ? { limit } : { limit, after };
}
