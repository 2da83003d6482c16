/** Listing and counting a collection from URL query parameters. */

import { invalidQuery } from '../errors.js';
import { checkPlanQueryLimits, parseListQuery } from '../query/listQuery.js';
import { type FolioDocument, QueryRejectedError, type Store } from '../store/port.js';
import type { KeyContext } from './context.js';

export type RawQuery = Record<string, string | string[] | undefined>;

export interface ListPage {
  data: FolioDocument[];
  meta: { total: number; limit: number; offset: number; hasMore: boolean };
}

/**
 * The page out of up to `limit + 1` rows fetched at `offset`, and the total when the rows alone
 * tell it: a page with nothing after it (it may be full) that is not past the end gives
 * `offset + its length`, so only a page with more after it, or one past the end, needs a count.
 */
export function pageOf<T>(rows: T[], limit: number, offset: number): { data: T[]; total: number | null } {
  const more = rows.length > limit;
  const data = more ? rows.slice(0, limit) : rows;
  const last = !more && (data.length > 0 || offset === 0);
  return { data, total: last ? offset + data.length : null };
}

export class ListingService {
  constructor(private readonly store: Store) {}

  async list(ctx: KeyContext, collection: string, raw: RawQuery): Promise<ListPage | { count: number }> {
    try {
      return await this.answer(ctx, collection, raw);
    } catch (error) {
      if (error instanceof QueryRejectedError) throw invalidQuery(error.param, error.message);
      throw error;
    }
  }

  private async answer(
    ctx: KeyContext,
    collection: string,
    raw: RawQuery,
  ): Promise<ListPage | { count: number }> {
    const query = parseListQuery(raw);
    checkPlanQueryLimits(
      query,
      {
        maxFilters: ctx.limits.maxFilters,
        maxLimit: ctx.limits.maxPageSize,
        maxOffset: ctx.limits.maxOffset,
      },
      ctx.plan,
    );
    const { documents } = this.store;
    if (query.count) return { count: await documents.count(ctx.scope, collection, query.filter) };
    // One document more than the page: whether anything follows is then known without a count.
    const rows = await documents.find(ctx.scope, collection, {
      filter: query.filter,
      sort: query.sort,
      skip: query.offset,
      limit: query.limit + 1,
      projection: query.projection,
    });
    const { data, total: known } = pageOf(rows, query.limit, query.offset);
    const total = known ?? (await documents.count(ctx.scope, collection, query.filter));
    return {
      data,
      meta: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + data.length < total },
    };
  }
}
