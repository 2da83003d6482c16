/** Listing and counting a collection from URL query parameters. */

import { collectionAccess, forbidden, invalidQuery } from '../errors.js';
import { checkPlanQueryLimits, type ListQuery, parseListQuery, type TotalMode } from '../query/listQuery.js';
import { cursorAfter } from '../store/documentQuery/cursor.js';
import { projectStored } from '../store/documentQuery/projection.js';
import {
  type FolioDocument,
  type QueryPlan,
  QueryRejectedError,
  type Store,
  type StoredFilter,
} from '../store/port.js';
import { fromStored, toStored } from '../store/storedForm.js';
import { type AutoIndexer, candidateFields } from './autoIndexes.js';
import type { KeyContext } from './context.js';
import { withinView } from './keyAccess.js';

export type RawQuery = Record<string, string | string[] | undefined>;

export interface ListPage {
  data: FolioDocument[];
  meta: {
    /** Null with `total=none`. */
    total: number | null;
    /** Present with `total=estimate`: false when counting stopped at the cap (total is a lower bound). */
    totalExact?: boolean;
    limit: number;
    /** Absent on a cursor page (`after`). */
    offset?: number;
    hasMore: boolean;
    /** Cursor for the next page (`after=`), null when there is none or the last row's key cannot be one. */
    next: string | null;
  };
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

/** `total=estimate` counts at most this many matches past the page. */
export const ESTIMATE_CAP = 1000;

export class ListingService {
  constructor(
    private readonly store: Store,
    private readonly autoIndexes?: AutoIndexer,
  ) {}

  async list(
    ctx: KeyContext,
    collection: string,
    raw: RawQuery,
  ): Promise<ListPage | { count: number } | { plan: QueryPlan }> {
    try {
      return await this.answerQuery(ctx, collection, raw);
    } catch (error) {
      if (error instanceof QueryRejectedError) throw invalidQuery(error.param, error.message);
      throw error;
    }
  }

  private async answerQuery(
    ctx: KeyContext,
    collection: string,
    raw: RawQuery,
  ): Promise<ListPage | { count: number } | { plan: QueryPlan }> {
    const parsed = parseListQuery(raw);
    checkPlanQueryLimits(
      parsed,
      {
        maxFilters: ctx.limits.maxFilters,
        maxLimit: ctx.limits.maxPageSize,
        maxOffset: ctx.limits.maxOffset,
      },
      ctx.plan,
    );
    // The key's rule filter joins the request's with AND (withinView), so an index on either
    // serves the query, and nothing outside the rule is ever counted or returned.
    const reach = ctx.access.collection(collection);
    const query = { ...parsed, filter: withinView(reach, parsed.filter) };
    const { documents } = this.store;
    this.autoIndexes?.observe(
      ctx.scope,
      collection,
      candidateFields(query.filter, query.sort),
      ctx.limits.maxIndexes,
      ctx.project.autoIndexes,
    );
    // A cursor page starts at its cursor, never at an offset. One document more than the page:
    // whether anything follows is then known without a count.
    const offset = query.position !== undefined ? 0 : query.offset;
    const window = {
      filter: query.filter,
      after: query.position,
      sort: query.sort,
      skip: offset,
      limit: query.limit + 1,
    };
    if (query.explain) {
      // The plan shows index names and collection sizes: for the owner's keys, not a browser's.
      // Its documentsExamined counts what a rule hides too: a filtered key gets no plan.
      if (ctx.key.scope !== 'read-write') throw forbidden('explain=true needs a read-write key.');
      if (reach.filter !== null) throw collectionAccess(collection, 'every document');
      return {
        plan: await documents.explain(ctx.scope, collection, { ...window, projection: query.projection }),
      };
    }
    if (query.count) return { count: await documents.count(ctx.scope, collection, query.filter) };
    const rows = await documents.find(ctx.scope, collection, {
      ...window,
      // The cursor needs the last row's sort values even when `select` leaves them out.
      projection: query.projection && withSortPaths(query.projection, query.sort),
    });
    const { data: fetched, total: known } = pageOf(rows, query.limit, offset);
    const hasMore = rows.length > query.limit;
    const last = fetched.at(-1);
    const next = hasMore && last ? cursorAfter(toStored(last), query.sort) : null;
    const { projection } = query;
    const data = projection
      ? fetched.map((doc) => fromStored(projectStored(toStored(doc), projection)))
      : fetched;
    const meta = await this.meta(ctx, collection, query, {
      offset,
      length: data.length,
      known,
      hasMore,
      next,
    });
    return { data, meta };
  }

  /** The page's `meta`, counting the matches when the page alone does not tell the total. */
  private async meta(
    ctx: KeyContext,
    collection: string,
    query: ListQuery,
    page: { offset: number; length: number; known: number | null; hasMore: boolean; next: string | null },
  ): Promise<ListPage['meta']> {
    const { offset, length, known, hasMore, next } = page;
    const cursorPage = query.position !== undefined;
    const counted = await this.total(
      ctx,
      collection,
      query.filter,
      query.total,
      cursorPage ? null : known,
      offset + length,
    );
    return {
      ...counted,
      limit: query.limit,
      ...(cursorPage ? {} : { offset }),
      hasMore,
      next,
    };
  }

  private async total(
    ctx: KeyContext,
    collection: string,
    filter: StoredFilter,
    mode: TotalMode,
    known: number | null,
    seen: number,
  ): Promise<{ total: number | null; totalExact?: boolean }> {
    if (mode === 'none') return { total: null };
    if (mode === 'exact')
      return { total: known ?? (await this.store.documents.count(ctx.scope, collection, filter)) };
    if (known !== null) return { total: known, totalExact: true };
    const upTo = seen + ESTIMATE_CAP;
    const n = await this.store.documents.count(ctx.scope, collection, filter, upTo);
    return { total: n, totalExact: n < upTo };
  }
}

/**
 * The selected paths plus the sort paths, so the cursor sees the last row's sort values; a path
 * under another one is dropped, as MongoDB refuses overlapping projections. The page is then
 * projected back to the selection.
 */
function withSortPaths(projection: string[], sort: Array<[string, 1 | -1]>): string[] {
  const paths = new Set([...projection, ...sort.map(([path]) => path)]);
  const covered = (path: string) =>
    [...paths].some((other) => other !== path && path.startsWith(`${other}.`));
  return [...paths].filter((path) => !covered(path));
}
