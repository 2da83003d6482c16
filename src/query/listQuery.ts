/**
 * `GET /{ns}/{collection}` query parameters → a validated, store-ready query ("Listing and
 * querying"). Syntax errors are 400 `invalid_query` naming the parameter; quantities over the
 * plan are 403 `plan_limit_exceeded`, checked separately because they depend on the caller.
 */
import { z } from 'zod';
import { invalidQuery, planLimitExceeded } from '../errors.js';
import { frozenThrough } from '../frozen.js';
import { keysetPosition } from '../store/documentQuery/cursor.js';
import { toStoredPath } from '../store/documentQuery/fieldPath.js';
import type { FindQuery, SortDirection, SortPosition, StoredFilter } from '../store/port.js';
import { isFilterParam, parseFilterParams, type RawQuery, singleValue } from './filterParams.js';

export type { RawQuery } from './filterParams.js';

export interface ListQuery {
  /** MongoDB filter over the stored form (`{}` when there is none). */
  filter: StoredFilter;
  /** How many `filter[...]` parameters were given: what the plan's "filters per query" counts. */
  filterCount: number;
  /** Stored paths with directions; always ends with `_id` (see `parseSort`). */
  sort: FindQuery['sort'];
  limit: number;
  offset: number;
  /** Stored paths to include, `_id` first; absent when the client did not `select`. */
  projection?: string[];
  count: boolean;
  /** The position from `after=<cursor>` (see cursor.ts): the page is the rows after it (FindQuery.after). */
  position?: SortPosition;
  /** How `meta.total` is obtained (see TOTAL_MODES). */
  total: TotalMode;
  /** `explain=true`: answer the store's plan for the page instead of the page. */
  explain: boolean;
}

/**
 * `total=exact` counts every match when the page alone does not tell (the default, as before);
 * `estimate` counts at most ESTIMATE_CAP matches past the page and says whether it stopped;
 * `none` never counts (`meta.total` is null).
 */
export const TOTAL_MODES = ['exact', 'estimate', 'none'] as const;
export type TotalMode = (typeof TOTAL_MODES)[number];
export const DEFAULT_TOTAL: TotalMode = 'exact';

export interface QueryLimits {
  maxFilters: number;
  maxLimit: number;
  maxOffset: number;
}

export const DEFAULT_LIMIT = 20;
export const DEFAULT_OFFSET = 0;
export const MAX_SORT_KEYS = 5;
export const MAX_SELECT_PATHS = 50;

const digits = z.string().regex(/^\d+$/);
const countSchema = z.enum(['true', 'false']);
const totalSchema = z.enum(TOTAL_MODES);

/**
 * The listing's parameters besides `filter[...]` (see filterParams.ts): what parseListQuery
 * accepts and what the OpenAPI document describes.
 */
export const listParamsSchema = z.object({
  sort: z
    .string()
    .optional()
    .meta({
      description: `Comma-separated fields, \`-\` for descending; at most ${MAX_SORT_KEYS}.`,
      example: '-$createdAt',
    }),
  // Integers as the document describes them; parseCount reads the URL's digits.
  limit: z
    .int()
    .min(1)
    .optional()
    .meta({ description: `Page size, default ${DEFAULT_LIMIT}; at most the plan’s maximum.` }),
  offset: z.int().min(0).optional().meta({ description: 'Documents to skip; at most the plan’s maximum.' }),
  select: z
    .string()
    .optional()
    .meta({ description: `Comma-separated fields to return (\`_id\` always); at most ${MAX_SELECT_PATHS}.` }),
  count: countSchema.optional().meta({ description: '`true`: answer `{count}` only.' }),
  after: z.string().optional().meta({
    description: 'Cursor from `meta.next`: the page after that row, in the same sort. Not with `offset`.',
  }),
  explain: countSchema
    .optional()
    .meta({ description: '`true`: answer how the store runs the page query (read-write keys only).' }),
  total: totalSchema.optional().meta({
    description: `How \`meta.total\` is computed: \`exact\` (default), \`estimate\` (a bounded count; \`meta.totalExact\` says whether it stopped short) or \`none\` (never counted; null).`,
  }),
});

// Anything else is refused rather than ignored: a typo such as `filters[x]=1` or `limit=10&sort`
// spelled `order` would otherwise silently return unfiltered or misordered data.
const KNOWN_PARAMS = new Set(Object.keys(listParamsSchema.shape));

/**
 * Parses of frozen query objects (the shared parses of query strings: src/http/queryStrings.ts),
 * kept while that object lives: a query string polled again is not parsed again. Frozen all
 * through, as the object it came from: requests share it. A query
 * that fails to parse is parsed (and fails) again each time.
 */
const parsedLists = new WeakMap<RawQuery, ListQuery>();

export function parseListQuery(query: RawQuery): ListQuery {
  if (!Object.isFrozen(query)) return parseListQueryOnce(query);
  const known = parsedLists.get(query);
  if (known) return known;
  const parsed = frozenThrough(parseListQueryOnce(query));
  parsedLists.set(query, parsed);
  return parsed;
}

function parseListQueryOnce(query: RawQuery): ListQuery {
  const params = new Map<string, string>();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || isFilterParam(key)) continue;
    if (!KNOWN_PARAMS.has(key)) {
      throw invalidQuery(key, `unknown parameter; expected filter[...], ${[...KNOWN_PARAMS].join(', ')}`);
    }
    params.set(key, singleValue(key, value));
  }
  const { filter, filterCount } = parseFilterParams(query);
  const select = params.get('select');
  const count = params.get('count');
  if (count !== undefined && !countSchema.safeParse(count).success) {
    throw invalidQuery('count', `must be true or false, not '${count}'`);
  }
  const explain = params.get('explain');
  if (explain !== undefined && !countSchema.safeParse(explain).success) {
    throw invalidQuery('explain', `must be true or false, not '${explain}'`);
  }
  const total = params.get('total') ?? DEFAULT_TOTAL;
  const totalMode = totalSchema.safeParse(total);
  if (!totalMode.success)
    throw invalidQuery('total', `must be one of ${TOTAL_MODES.join(', ')}, not '${total}'`);
  const after = params.get('after');
  if (after !== undefined && params.has('offset')) {
    throw invalidQuery('after', 'give after or offset, not both');
  }
  const sort = parseSort(params.get('sort'));
  return {
    filter,
    filterCount,
    sort,
    limit: parseCount('limit', params.get('limit'), DEFAULT_LIMIT, 1),
    offset: parseCount('offset', params.get('offset'), DEFAULT_OFFSET, 0),
    ...(select === undefined ? {} : { projection: parseSelect(select) }),
    count: count === 'true',
    ...(after === undefined ? {} : { position: keysetPosition(after, sort) }),
    total: totalMode.data,
    explain: explain === 'true',
  };
}

/** Throws 403 `plan_limit_exceeded` for the first quantity over the plan's maximum. */
export function checkPlanQueryLimits(q: ListQuery, limits: QueryLimits, plan: string): void {
  if (q.filterCount > limits.maxFilters) throw planLimitExceeded('filters', limits.maxFilters, plan);
  if (q.limit > limits.maxLimit) throw planLimitExceeded('limit', limits.maxLimit, plan);
  if (q.offset > limits.maxOffset) throw planLimitExceeded('offset', limits.maxOffset, plan);
}

function parseCount(param: string, raw: string | undefined, fallback: number, min: number): number {
  if (raw === undefined) return fallback;
  const n = digits.safeParse(raw).success ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw invalidQuery(param, `must be a whole number of at least ${min}, not '${raw}'`);
  }
  return n;
}

/**
 * `sort=-age,name`: comma-separated fields, each descending with a leading `-`. Ties are broken by
 * `_id` in the direction of the last key, so equal keys never make pages overlap or skip. The
 * same direction (rather than always ascending) lets one index on (key, _id) serve both `key`
 * and `-key` by a forward or backward scan, in SQLite and in MongoDB alike. Without `sort`,
 * documents come in `_id` order, which is creation order.
 */
function parseSort(raw: string | undefined): FindQuery['sort'] {
  if (raw === undefined) return [['_id', 1]];
  const items = raw.split(',');
  if (items.length > MAX_SORT_KEYS) throw invalidQuery('sort', `at most ${MAX_SORT_KEYS} sort fields`);
  const sort: FindQuery['sort'] = [];
  const seen = new Set<string>();
  for (const item of items) {
    const direction: SortDirection = item.startsWith('-') ? -1 : 1;
    const path = toStoredPath('sort', direction === -1 ? item.slice(1) : item);
    if (seen.has(path)) throw invalidQuery('sort', `field '${item}' given twice`);
    seen.add(path);
    sort.push([path, direction]);
    // `_id` is unique: later keys could never decide anything.
    if (path === '_id') return sort;
  }
  sort.push(['_id', sort.at(-1)![1]]);
  return sort;
}

/**
 * `select=name,address.city`: the fields to return. `_id` always comes first (an empty inclusion
 * list would mean "everything" to MongoDB), and a path under another selected path is dropped
 * because the parent already includes it (MongoDB refuses such overlapping projections).
 */
function parseSelect(raw: string): string[] {
  const items = raw.split(',');
  if (items.length > MAX_SELECT_PATHS) throw invalidQuery('select', `at most ${MAX_SELECT_PATHS} fields`);
  const paths = new Set(['_id', ...items.map((item) => toStoredPath('select', item))]);
  const covered = (path: string) =>
    [...paths].some((other) => other !== path && path.startsWith(`${other}.`));
  return [...paths].filter((path) => !covered(path));
}
