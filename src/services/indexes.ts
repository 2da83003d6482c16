/**
 * Indexes declared on a collection (`/{ns}/{collection}/_indexes`): list, create, drop. The
 * declaration is checked here (fields, name, plan count, no duplicate); the store builds it.
 */
import { z } from 'zod';
import { AppError, badRequest, conflict, notFound, planLimitExceeded } from '../errors.js';
import { toStoredPath } from '../store/documentQuery/fieldPath.js';
import { DuplicateError, type IndexDefinition, type IndexRecord, type Store } from '../store/port.js';
import { isMetaField } from '../store/storedForm.js';
import { AUTO_PREFIX, isAutoIndex } from './autoIndexes.js';
import type { KeyContext } from './context.js';

/** Keys of one index; MongoDB's planner rarely profits from more. */
export const MAX_INDEX_FIELDS = 3;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export const createIndexSchema = z.strictObject({
  fields: z
    .array(
      z.strictObject({
        path: z
          .string()
          .min(1)
          .max(1024)
          .meta({ description: 'Field path, dot notation for nested fields.' }),
        order: z
          .union([z.literal(1), z.literal(-1)])
          .default(1)
          .meta({ description: '1 ascending (default), -1 descending.' }),
      }),
    )
    .min(1)
    .max(MAX_INDEX_FIELDS),
  unique: z.boolean().default(false),
  name: z
    .string()
    .regex(NAME)
    .optional()
    .meta({ description: 'Default: the fields and orders joined by `_`, e.g. `age_1`.' }),
});

export type CreateIndexInput = z.infer<typeof createIndexSchema>;

export class IndexService {
  constructor(private readonly store: Store) {}

  async list(ctx: KeyContext, collection: string): Promise<Array<IndexRecord & { auto: boolean }>> {
    return (await this.store.indexes.list(ctx.scope, collection)).map((i) => ({
      ...i,
      auto: isAutoIndex(i),
    }));
  }

  async create(
    ctx: KeyContext,
    collection: string,
    input: CreateIndexInput,
  ): Promise<IndexRecord & { auto: boolean }> {
    const definition = definitionOf(input);
    const existing = await this.store.indexes.list(ctx.scope, collection);
    const max = ctx.limits.maxIndexes;
    // Answered here for the common case; the store counts again as it creates (racing requests).
    if (existing.length >= max) throw planLimitExceeded('indexes per collection', max, ctx.plan);
    const same = existing.find((i) => sameKeys(i, definition));
    if (same) throw conflict(`The index '${same.name}' has these fields already.`, { index: same.name });
    try {
      const created = await this.store.indexes.create(ctx.scope, collection, definition, max);
      if (!created) throw planLimitExceeded('indexes per collection', max, ctx.plan);
      return { ...created, auto: false };
    } catch (error) {
      if (error instanceof DuplicateError) {
        throw conflict(`The collection has an index named '${definition.name}' already.`, {
          index: definition.name,
        });
      }
      throw error;
    }
  }

  async drop(ctx: KeyContext, collection: string, name: string): Promise<void> {
    if (!(await this.store.indexes.drop(ctx.scope, collection, name))) throw notFound('Index');
  }
}

/** The stored declaration: paths checked like filter fields; metadata fields are indexed already. */
export function definitionOf(input: CreateIndexInput): IndexDefinition {
  const fields = input.fields.map(({ path, order }, i) => {
    if (path === '_id' || isMetaField(path)) {
      throw badRequest(`fields[${i}].path: '${path}' is always indexed.`);
    }
    let stored: string;
    try {
      stored = toStoredPath(`fields[${i}].path`, path);
    } catch (error) {
      if (error instanceof AppError) throw badRequest(error.message);
      throw error;
    }
    return { path: stored, order };
  });
  if (new Set(fields.map((f) => f.path)).size !== fields.length) {
    throw badRequest('fields: a path is given twice.');
  }
  const name = input.name ?? fields.map((f) => `${f.path}_${f.order}`).join('_');
  // Folio's own MongoDB indexes are folio_…, automatic indexes auto_… (autoIndexes.ts).
  for (const reserved of ['folio_', AUTO_PREFIX]) {
    if (name.toLowerCase().startsWith(reserved))
      throw badRequest(`name: names starting with '${reserved}' are reserved.`);
  }
  if (!NAME.test(name)) {
    throw badRequest(
      `name: the default name '${name.slice(0, 80)}' is not a valid index name; give one (${NAME.source}).`,
    );
  }
  return { name, fields, unique: input.unique };
}

function sameKeys(a: IndexDefinition, b: IndexDefinition): boolean {
  return (
    a.unique === b.unique &&
    a.fields.length === b.fields.length &&
    a.fields.every((f, i) => f.path === b.fields[i]!.path && f.order === b.fields[i]!.order)
  );
}
