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
    const data = await documents.find(ctx.scope, collection, {
      filter: query.filter,
      sort: query.sort,
      skip: query.offset,
      limit: query.limit,
      projection: query.projection,
    });
    // A short page that is not past the end already tells the total: no second scan.
    const lastPage = data.length < query.limit && (data.length > 0 || query.offset === 0);
    const total = lastPage
      ? query.offset + data.length
      : await documents.count(ctx.scope, collection, query.filter);
    return {
      data,
      meta: { total, limit: query.limit, offset: query.offset, hasMore: query.offset + data.length < total },
    };
  }
}
