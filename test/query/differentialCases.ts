/**
 * The generated cases of the query differential (differential.test.ts on SQLite,
 * differential.mongodb.test.ts on a live MongoDB): small collections of documents whose fields
 * mix types, arrays and nesting, and URL list parameters drawn from the values present in them.
 * The seed is fixed so every run checks the same cases and a failure replays.
 */
import fc from 'fast-check';
import type { RawQuery } from '../../src/query/listQuery.js';
import type { JsonObject, JsonValue } from '../../src/store/port.js';

// Fixed so every run checks the same cases and a failure replays; override to explore more.
export const SEED = Number(process.env.FOLIO_QUERY_SEED ?? 20240611);
export const RUNS = Number(process.env.FOLIO_QUERY_RUNS ?? 1200);

// ---------------------------------------------------------------------------------------------
// Documents

const WORDS = [
  'apple',
  'Apple',
  'APPLE',
  'éclair',
  'Éclair',
  'ÉCLAIR',
  'straße',
  'STRASSE',
  'ẞ',
  'ſ',
  'K',
  'ΣΊΣΥΦΟΣ',
  'σίσυφος',
  'ς',
  'İstanbul',
  'istanbul',
  'ǅ',
  'ǆ',
  'émoji 😀',
  '😀',
  '𝔘𝔫𝔦',
  '',
  'ſ',
  'K',
  'ς',
  'ẞ',
  'ǅ',
  'null',
  'true',
  'false',
  '100%',
  'a.b',
  'x*y',
  '(p)',
  '[b]',
  'back\\slash',
  'dol$ar',
  '^caret',
  'quote"d',
  "it's",
  'tab\there',
  'new\nline',
  'zero\u0000byte',
  'Zz',
  'zz',
  'ab',
  'abc',
];
const NUMERIC_STRINGS = ['5', '10', '2.5', '-1', '007', '1e3', '0', '3', '20'];
const DATES = [
  '2024-01-05T10:00:00.000Z',
  '2024-01-05T10:00:00.001Z',
  '2023-12-31T23:59:59.999Z',
  '2024-02-29T00:00:00.000Z',
  '2025-06-01T12:30:00.000Z',
];

const scalar: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.integer({ min: -3, max: 20 }),
  fc.constantFrom(1.5, 2.25, -0.5, 1e6, 0, 3),
  fc.constantFrom(...NUMERIC_STRINGS),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(...DATES),
  fc.constantFrom(...WORDS),
);
const scalars = fc.array(scalar, { maxLength: 4 });
const scalarOrArray = fc.oneof({ weight: 3, arbitrary: scalar }, { weight: 1, arbitrary: scalars });

const objectValue = fc.record(
  { x: scalarOrArray, y: scalar, z: fc.record({ w: scalar }, { requiredKeys: [] }) },
  { requiredKeys: [] },
);
const item = fc.record({ k: fc.oneof(scalar, scalars), v: scalar }, { requiredKeys: [] });

/** User fields; every one may be missing. Objects never carry numeric keys inside arrays. */
const userFields = fc.record(
  {
    n: fc.oneof(fc.integer({ min: -3, max: 20 }), fc.constantFrom(...NUMERIC_STRINGS), fc.constant(null)),
    s: fc.oneof(fc.constantFrom(...WORDS), fc.constantFrom(...DATES)),
    m: scalarOrArray,
    tags: fc.oneof(scalars, scalar),
    o: fc.oneof({ weight: 3, arbitrary: objectValue }, { weight: 1, arbitrary: scalar }),
    items: fc.oneof(
      {
        weight: 3,
        arbitrary: fc.array(fc.oneof({ weight: 4, arbitrary: item }, { weight: 1, arbitrary: scalar }), {
          maxLength: 3,
        }),
      },
      { weight: 1, arbitrary: item },
    ),
    stats: fc.oneof(
      fc.record({ '0': scalar, '2024': scalar }, { requiredKeys: [] }),
      fc.array(scalar, { maxLength: 3 }),
    ),
    d: fc.oneof(fc.constantFrom(...DATES), fc.array(fc.constantFrom(...DATES), { maxLength: 2 })),
  },
  { requiredKeys: [] },
);

const meta = fc.record({
  version: fc.integer({ min: 1, max: 4 }),
  createdAt: fc.constantFrom(...DATES),
  updatedAt: fc.constantFrom(...DATES),
});

const collection = fc
  .uniqueArray(fc.integer({ min: 0, max: 999 }), { minLength: 2, maxLength: 14 })
  .chain((ids) =>
    fc.tuple(
      ...ids.map((id) => fc.tuple(userFields, meta).map(([fields, folio]) => ({ id, fields, folio }))),
    ),
  )
  .map((rows) =>
    rows.map(
      ({ id, fields, folio }): JsonObject =>
        // Through JSON, as the store keeps it (e.g. -0 becomes 0).
        JSON.parse(JSON.stringify({ _id: `doc_${String(id).padStart(3, '0')}`, ...fields, _folio: folio })),
    ),
  );

// ---------------------------------------------------------------------------------------------
// URL parameters

/** Field paths written as in a URL, separated by white space. */
const paths = (text: string) => text.trim().split(/\s+/);
const FILTER_FIELDS = paths(`n s m tags tags.0 o o.x o.y o.z.w o.x.q items items.k items.v items.0 items.0.k
  items.1.k stats.0 stats.2024 d zzz _id $version $createdAt $updatedAt`);
const SORT_FIELDS = paths(`n s m tags tags.0 o.x o.y o.z.w items.k items.v items.0.k stats.0 stats.2024 d zzz
  _id $version $createdAt $updatedAt`);
const SELECT_FIELDS = paths('n s o o.x o.z.w items.k items tags d $version $createdAt');

const fixedValueText = fc.oneof(
  fc.constantFrom(...WORDS),
  fc.constantFrom(...NUMERIC_STRINGS),
  fc.integer({ min: -3, max: 20 }).map(String),
  fc.constantFrom('1.5', '2.25', '-0.5', '1000000', 'true', 'false', 'null', 'doc_5', 'doc_'),
  fc.constantFrom(...DATES, '2024-01', '2024-01-05'),
  // Substrings for `contains`, including case and Unicode folding pairs.
  fc.constantFrom(
    'É',
    'é',
    'ss',
    'SS',
    'ß',
    'σ',
    'Σ',
    'ς',
    's',
    'S',
    'k',
    'K',
    'i',
    'İ',
    '😀',
    '.',
    '*',
    '\\',
    '"',
    'pp',
    'A',
  ),
);

const META_PATHS: Record<string, string> = {
  $version: '_folio.version',
  $createdAt: '_folio.createdAt',
  $updatedAt: '_folio.updatedAt',
};

/** Every scalar reachable at `field` in the documents (through any arrays), as URL text. */
function valuesAt(docs: JsonObject[], field: string): string[] {
  const out = new Set<string>();
  const leaves = (v: JsonValue): void => {
    if (Array.isArray(v)) v.forEach(leaves);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(leaves);
    else out.add(String(v));
  };
  const walk = (v: JsonValue | undefined, segments: string[]): void => {
    if (v === undefined) return;
    if (segments.length === 0) {
      leaves(v);
      return;
    }
    if (Array.isArray(v)) {
      for (const item of v) walk(item, segments);
      const index = Number(segments[0]);
      if (Number.isInteger(index)) walk(v[index], segments.slice(1));
    } else if (v !== null && typeof v === 'object') {
      walk(v[segments[0]!], segments.slice(1));
    }
  };
  for (const doc of docs) walk(doc, (META_PATHS[field] ?? field).split('.'));
  return [...out];
}

/** Characters with a Unicode case-folding partner that plain case mapping misses. */
const FOLD_PARTNERS: Record<string, string> = { ſ: 's', K: 'k', ς: 'σ', ẞ: 'ß', ǅ: 'ǆ', É: 'é', Σ: 'ς' };

/** Values for an `op` filter on `field`: values present there, pieces of them, fold partners, fixed ones. */
function valueTextFor(docs: JsonObject[], field: string, op: Operator): fc.Arbitrary<string> {
  const present = valuesAt(docs, field);
  if (present.length === 0) return fc.oneof(fixedValueText, fc.constant('null'));
  const piece = fc
    .tuple(fc.constantFrom(...present), fc.nat(), fc.nat(), fc.constantFrom('upper', 'lower', 'same'))
    .map(([text, a, b, how]) => {
      const chars = [...text];
      const start = a % (chars.length + 1);
      const piece = chars.slice(start, start + 1 + (b % 3)).join('');
      return how === 'upper' ? piece.toUpperCase() : how === 'lower' ? piece.toLowerCase() : piece;
    });
  const foldable = present.filter((v) => [...v].some((c) => Object.hasOwn(FOLD_PARTNERS, c)));
  const folded = foldable.length
    ? fc.constantFrom(...foldable).map((v) => [...v].map((c) => FOLD_PARTNERS[c] ?? c).join(''))
    : piece;
  if (op === 'contains') {
    return fc.oneof(
      { weight: 4, arbitrary: piece },
      { weight: 2, arbitrary: folded },
      { weight: 1, arbitrary: fixedValueText },
    );
  }
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...present) },
    { weight: 1, arbitrary: piece },
    { weight: 1, arbitrary: fc.constant('null') },
    { weight: 2, arbitrary: fixedValueText },
  );
}

const OPERATORS = [undefined, 'eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'contains', 'in', 'exists'] as const;
type Operator = (typeof OPERATORS)[number];

/** Paths through arrays and mixed types are where implementations disagree: draw them more. */
const filterField = fc.oneof(
  { weight: 1, arbitrary: fc.constantFrom(...FILTER_FIELDS) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('items.k', 'items.v', 'items.0.k', 'tags', 'm', 'o.x', 'stats.0', 'd'),
  },
);

function filterParamFor(docs: JsonObject[]): fc.Arbitrary<[string, string]> {
  const operator = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...OPERATORS) },
    { weight: 2, arbitrary: fc.constantFrom<Operator>('contains', 'in', 'eq', undefined) },
  );
  return fc.tuple(filterField, operator).chain(([field, op]) => {
    const valueText = valueTextFor(docs, field, op);
    return fc
      .tuple(valueText, fc.array(valueText, { minLength: 1, maxLength: 3 }), fc.boolean())
      .map(([value, list, flag]): [string, string] => {
        const key = op === undefined ? `filter[${field}]` : `filter[${field}][${op}]`;
        if (op === 'exists') return [key, String(flag)];
        if (op === 'in') return [key, list.join(',')];
        return [key, value];
      });
  });
}

const sortParam = fc
  .uniqueArray(fc.constantFrom(...SORT_FIELDS), { minLength: 1, maxLength: 2 })
  .chain((fields) => fc.tuple(...fields.map((f) => fc.boolean().map((desc) => (desc ? `-${f}` : f)))))
  .map((keys) => keys.join(','));

function urlQueryFor(docs: JsonObject[]): fc.Arbitrary<RawQuery> {
  return fc
    .record(
      {
        filters: fc.array(filterParamFor(docs), { maxLength: 2 }),
        sort: fc.option(sortParam, { nil: undefined }),
        limit: fc.option(fc.integer({ min: 1, max: 30 }).map(String), { nil: undefined }),
        offset: fc.option(fc.integer({ min: 0, max: 10 }).map(String), { nil: undefined }),
        select: fc.option(fc.uniqueArray(fc.constantFrom(...SELECT_FIELDS), { minLength: 1, maxLength: 3 }), {
          nil: undefined,
        }),
      },
      { requiredKeys: ['filters'] },
    )
    .map(
      ({ filters, sort, limit, offset, select }): RawQuery => ({
        ...Object.fromEntries(filters),
        ...(sort === undefined ? {} : { sort }),
        ...(limit === undefined ? {} : { limit }),
        ...(offset === undefined ? {} : { offset }),
        ...(select === undefined ? {} : { select: select.join(',') }),
      }),
    );
}

export const testCase = collection.chain((docs) => urlQueryFor(docs).map((params) => ({ docs, params })));
