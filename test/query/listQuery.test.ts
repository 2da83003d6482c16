import { expect } from 'chai';
import { AppError } from '../../src/errors.js';
import { parseFilterParams } from '../../src/query/filterParams.js';
import {
  checkPlanQueryLimits,
  type ListQuery,
  parseListQuery,
  type RawQuery,
} from '../../src/query/listQuery.js';

/** The 400 `invalid_query` error `fn` throws; it must name `param`. */
function invalid(fn: () => unknown, param: string): AppError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected invalid_query for ${param}`).to.be.instanceOf(AppError);
  const error = caught as AppError;
  expect(error.status).to.equal(400);
  expect(error.code).to.equal('invalid_query');
  expect(error.details).to.deep.equal({ param });
  expect(error.message.startsWith(`${param}: `), error.message).to.equal(true);
  return error;
}

const filterOf = (query: RawQuery) => parseListQuery(query).filter;

describe('list query parameters', () => {
  describe('defaults', () => {
    it('no parameters: everything, 20 per page from 0, in _id (creation) order', () => {
      expect(parseListQuery({})).to.deep.equal({
        filter: {},
        filterCount: 0,
        sort: [['_id', 1]],
        limit: 20,
        offset: 0,
        count: false,
        total: 'exact',
        explain: false,
      });
    });

    it('ignores parameters whose value is undefined', () => {
      expect(parseListQuery({ limit: undefined, 'filter[a]': undefined }).limit).to.equal(20);
    });
  });

  describe('filter values are strings that may also stand for a JSON scalar', () => {
    it('filter[field]=text matches the string only', () => {
      expect(filterOf({ 'filter[name]': 'bob' })).to.deep.equal({ name: { $in: ['bob'] } });
    });

    it('numeric text matches the string and the number', () => {
      expect(filterOf({ 'filter[age]': '30' })).to.deep.equal({ age: { $in: ['30', 30] } });
      expect(filterOf({ 'filter[x]': '-2.5e3' })).to.deep.equal({ x: { $in: ['-2.5e3', -2500] } });
    });

    it('true, false and null match the string and the JSON value', () => {
      expect(filterOf({ 'filter[a]': 'true' })).to.deep.equal({ a: { $in: ['true', true] } });
      expect(filterOf({ 'filter[a]': 'false' })).to.deep.equal({ a: { $in: ['false', false] } });
      expect(filterOf({ 'filter[a]': 'null' })).to.deep.equal({ a: { $in: ['null', null] } });
    });

    it('only strict JSON numbers are numbers (007, +5, " 5", 0x5, 1e400, True stay strings)', () => {
      for (const text of ['007', '+5', ' 5', '0x5', '1e400', '.5', '5.', 'True', 'NULL', '']) {
        expect(filterOf({ 'filter[a]': text }), text).to.deep.equal({ a: { $in: [text] } });
      }
    });

    it('-0 reads as 0', () => {
      expect(filterOf({ 'filter[a]': '-0' })).to.deep.equal({ a: { $in: ['-0', 0] } });
    });

    it('filter[field][eq] is the same as filter[field]', () => {
      expect(filterOf({ 'filter[age][eq]': '30' })).to.deep.equal(filterOf({ 'filter[age]': '30' }));
    });
  });

  describe('operators', () => {
    it('neq excludes the string and its reading (and matches documents without the field)', () => {
      expect(filterOf({ 'filter[age][neq]': '30' })).to.deep.equal({ age: { $nin: ['30', 30] } });
    });

    it('gt, gte, lt, lte compare numerically when the value is numeric', () => {
      for (const op of ['gt', 'gte', 'lt', 'lte']) {
        expect(filterOf({ [`filter[n][${op}]`]: '1.5' })).to.deep.equal({ n: { [`$${op}`]: 1.5 } });
      }
    });

    it('gt, gte, lt, lte compare as strings otherwise, so ISO dates order correctly', () => {
      expect(filterOf({ 'filter[at][gte]': '2024-01-05T10:00:00.000Z' })).to.deep.equal({
        at: { $gte: '2024-01-05T10:00:00.000Z' },
      });
      expect(filterOf({ 'filter[a][lt]': 'true' })).to.deep.equal({ a: { $lt: 'true' } });
      expect(filterOf({ 'filter[a][gt]': '007' })).to.deep.equal({ a: { $gt: '007' } });
    });

    it('contains is a case-insensitive regex of the escaped text', () => {
      expect(filterOf({ 'filter[name][contains]': 'Ann' })).to.deep.equal({
        name: { $regex: 'Ann', $options: 'i' },
      });
      expect(filterOf({ 'filter[name][contains]': 'a.b*c(d)[e]{f}|g^h$i?j+k\\l/m' })).to.deep.equal({
        name: { $regex: 'a\\.b\\*c\\(d\\)\\[e\\]\\{f\\}\\|g\\^h\\$i\\?j\\+k\\\\l\\/m', $options: 'i' },
      });
    });

    it('the escaped contains text matches itself literally and nothing else', () => {
      const text = 'a.b*c(d)[e]{f}|g^h$i?j+k\\l/m-n,o#p z\u0000';
      const { $regex } = (filterOf({ 'filter[x][contains]': text }) as { x: { $regex: string } }).x;
      const regex = new RegExp($regex, 'iu');
      expect(regex.test(`>>${text}<<`)).to.equal(true);
      expect(regex.test(text.replace('.', 'X'))).to.equal(false);
    });

    it('in takes a comma-separated list; each item also matches its reading; duplicates collapse', () => {
      expect(filterOf({ 'filter[status][in]': 'new,2,null,new,2' })).to.deep.equal({
        status: { $in: ['new', '2', 2, 'null', null] },
      });
      expect(filterOf({ 'filter[s][in]': '' })).to.deep.equal({ s: { $in: [''] } });
    });

    it('exists takes true or false', () => {
      expect(filterOf({ 'filter[a][exists]': 'true' })).to.deep.equal({ a: { $exists: true } });
      expect(filterOf({ 'filter[a][exists]': 'false' })).to.deep.equal({ a: { $exists: false } });
      invalid(() => parseListQuery({ 'filter[a][exists]': 'yes' }), 'filter[a][exists]');
      invalid(() => parseListQuery({ 'filter[a][exists]': 'TRUE' }), 'filter[a][exists]');
    });

    it('unknown operators are 400 naming the parameter', () => {
      const err = invalid(() => parseListQuery({ 'filter[age][foo]': '1' }), 'filter[age][foo]');
      expect(err.message).to.contain('foo');
      invalid(() => parseListQuery({ 'filter[age][$gt]': '1' }), 'filter[age][$gt]');
      invalid(() => parseListQuery({ 'filter[age][EQ]': '1' }), 'filter[age][EQ]');
      invalid(() => parseListQuery({ 'filter[age][]': '1' }), 'filter[age][]');
    });

    it('several filters combine with AND, in parameter order, and are counted', () => {
      const q = parseListQuery({ 'filter[a]': 'x', 'filter[b][gt]': '2', 'filter[a][neq]': 'y' });
      expect(q.filter).to.deep.equal({
        $and: [{ a: { $in: ['x'] } }, { b: { $gt: 2 } }, { a: { $nin: ['y'] } }],
      });
      expect(q.filterCount).to.equal(3);
    });
  });

  describe('field paths', () => {
    it('dot notation addresses nested fields', () => {
      expect(filterOf({ 'filter[address.city]': 'Paris' })).to.deep.equal({
        'address.city': { $in: ['Paris'] },
      });
    });

    it('the metadata names map to their stored paths; _id stays _id', () => {
      expect(filterOf({ 'filter[$version][gte]': '2' })).to.deep.equal({ '_folio.version': { $gte: 2 } });
      expect(filterOf({ 'filter[$createdAt][lt]': '2024-02' })).to.deep.equal({
        '_folio.createdAt': { $lt: '2024-02' },
      });
      expect(filterOf({ 'filter[$updatedAt][exists]': 'true' })).to.deep.equal({
        '_folio.updatedAt': { $exists: true },
      });
      expect(filterOf({ 'filter[_id]': 'doc_1' })).to.deep.equal({ _id: { $in: ['doc_1'] } });
    });

    it('refuses $-segments, empty segments, the reserved _folio and over-deep paths, naming the parameter', () => {
      for (const field of [
        '$where',
        'a.$gt',
        '$version.x',
        'a.$version',
        '$Version',
        'a..b',
        '.a',
        'a.',
        '_folio',
        '_folio.version',
        Array.from({ length: 17 }, () => 'a').join('.'),
        'x'.repeat(513),
        'a.0.1.2.3.4',
      ]) {
        invalid(() => parseListQuery({ [`filter[${field}]`]: '1' }), `filter[${field}]`);
      }
      invalid(() => parseListQuery({ 'filter[]': '1' }), 'filter[]');
    });

    it('accepts numeric, unicode and punctuation segments other than $ and .', () => {
      expect(Object.keys(filterOf({ 'filter[stats.2024.é-x y]': '1' }))).to.deep.equal(['stats.2024.é-x y']);
      expect(Object.keys(filterOf({ 'filter[a$b]': '1' }))).to.deep.equal(['a$b']);
      expect(Object.keys(filterOf({ 'filter[a.0.1.2.3.01]': '1' }))).to.deep.equal(['a.0.1.2.3.01']);
    });
  });

  describe('malformed parameters', () => {
    it('malformed filter brackets are 400 naming the parameter', () => {
      for (const key of [
        'filter',
        'filter[a',
        'filter[a]]',
        'filter[a][gt][x]',
        'filter[a]x',
        'filter[[a]]',
        'filter[a][b',
      ]) {
        invalid(() => parseListQuery({ [key]: '1' }), key);
      }
    });

    it('a parameter given twice is 400', () => {
      invalid(() => parseListQuery({ 'filter[a]': ['1', '2'] }), 'filter[a]');
      invalid(() => parseListQuery({ limit: ['1', '2'] }), 'limit');
      invalid(() => parseListQuery({ sort: ['a', 'b'] }), 'sort');
    });

    it('unknown top-level parameters are 400, so typos do not silently widen a query', () => {
      invalid(() => parseListQuery({ 'filters[a]': '1' }), 'filters[a]');
      invalid(() => parseListQuery({ order: 'a' }), 'order');
      invalid(() => parseListQuery({ Limit: '5' }), 'Limit');
    });

    it('more than 100 filters is 400 before any plan check', () => {
      const query = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`filter[f${i}]`, 'x']));
      const err = invalid(() => parseListQuery(query), 'filter');
      expect(err.message).to.contain('too many filters');
      expect(parseListQuery(Object.fromEntries(Object.entries(query).slice(0, 100))).filterCount).to.equal(
        100,
      );
    });

    it('an in list of more than 100 values is 400', () => {
      invalid(
        () => parseListQuery({ 'filter[a][in]': Array.from({ length: 101 }, String).join(',') }),
        'filter[a][in]',
      );
    });
  });

  describe('sort', () => {
    it('a field sorts ascending and ties break by _id the same way', () => {
      expect(parseListQuery({ sort: 'age' }).sort).to.deep.equal([
        ['age', 1],
        ['_id', 1],
      ]);
    });

    it('a leading - sorts descending, ties by _id descending (one index scan serves it)', () => {
      expect(parseListQuery({ sort: '-age' }).sort).to.deep.equal([
        ['age', -1],
        ['_id', -1],
      ]);
    });

    it('metadata names and dot paths work in sort', () => {
      expect(parseListQuery({ sort: '-$createdAt' }).sort).to.deep.equal([
        ['_folio.createdAt', -1],
        ['_id', -1],
      ]);
      expect(parseListQuery({ sort: 'address.city,-$version' }).sort).to.deep.equal([
        ['address.city', 1],
        ['_folio.version', -1],
        ['_id', -1],
      ]);
    });

    it('sorting on _id needs no tie-break, and keys after _id are dropped', () => {
      expect(parseListQuery({ sort: '-_id' }).sort).to.deep.equal([['_id', -1]]);
      expect(parseListQuery({ sort: 'a,_id,b' }).sort).to.deep.equal([
        ['a', 1],
        ['_id', 1],
      ]);
    });

    it('bad sort values are 400 naming sort', () => {
      for (const sort of [
        '',
        '-',
        'a,',
        ',a',
        'a,a',
        'a,-a',
        '$foo',
        '_folio.version',
        'a..b',
        'a,b,c,d,e,f',
      ]) {
        invalid(() => parseListQuery({ sort }), 'sort');
      }
    });
  });

  describe('limit and offset', () => {
    it('take whole numbers', () => {
      const q = parseListQuery({ limit: '50', offset: '0' });
      expect([q.limit, q.offset]).to.deep.equal([50, 0]);
      expect(parseListQuery({ offset: '1000' }).offset).to.equal(1000);
    });

    it('limit 0, negatives, fractions, exponents, signs, spaces, words and absurd sizes are 400 naming the parameter', () => {
      for (const value of ['0', '-1', '1.5', '1e2', '+5', ' 5', '5 ', '', 'abc', '99999999999999999999']) {
        invalid(() => parseListQuery({ limit: value }), 'limit');
      }
      for (const value of ['-1', '1.5', 'x', '', '99999999999999999999']) {
        invalid(() => parseListQuery({ offset: value }), 'offset');
      }
    });
  });

  describe('select', () => {
    it('lists stored paths with _id always first', () => {
      expect(parseListQuery({ select: 'name,address.city' }).projection).to.deep.equal([
        '_id',
        'name',
        'address.city',
      ]);
      expect(parseListQuery({ select: '_id' }).projection).to.deep.equal(['_id']);
    });

    it('maps metadata names', () => {
      expect(parseListQuery({ select: '$version,$updatedAt' }).projection).to.deep.equal([
        '_id',
        '_folio.version',
        '_folio.updatedAt',
      ]);
    });

    it('drops duplicates and paths inside another selected path', () => {
      expect(parseListQuery({ select: 'a.b,a,c,c,a.d' }).projection).to.deep.equal(['_id', 'a', 'c']);
    });

    it('bad fields are 400 naming select', () => {
      for (const select of ['', 'a,,b', '$x', '_folio', 'a.$b'])
        invalid(() => parseListQuery({ select }), 'select');
    });

    it('takes at most 50 fields: one more is 400 naming select', () => {
      const fields = (n: number) => Array.from({ length: n }, (_, i) => `f${i}`).join(',');
      expect(parseListQuery({ select: fields(50) }).projection).to.have.length(51);
      invalid(() => parseListQuery({ select: fields(51) }), 'select');
    });
  });

  describe('count', () => {
    it('count=true asks for the count only; count=false is the default', () => {
      expect(parseListQuery({ count: 'true' }).count).to.equal(true);
      expect(parseListQuery({ count: 'false' }).count).to.equal(false);
    });

    it('other values are 400', () => {
      for (const count of ['1', 'yes', 'TRUE', '']) invalid(() => parseListQuery({ count }), 'count');
    });
  });

  describe('parseFilterParams', () => {
    it('builds the same filter from the filter parameters and ignores the others', () => {
      const query = { 'filter[a][gt]': '1', 'filter[b]': 'x', events: 'created', sort: 'whatever' };
      expect(parseFilterParams(query)).to.deep.equal({
        filter: { $and: [{ a: { $gt: 1 } }, { b: { $in: ['x'] } }] },
        filterCount: 2,
      });
      expect(parseFilterParams({})).to.deep.equal({ filter: {}, filterCount: 0 });
    });

    it('still refuses bad filter parameters', () => {
      invalid(() => parseFilterParams({ 'filter[a][nope]': '1' }), 'filter[a][nope]');
    });
  });
});

describe('plan limits on list queries', () => {
  const limits = { maxFilters: 5, maxLimit: 50, maxOffset: 1000 };
  const query = (overrides: Partial<ListQuery>): ListQuery => ({ ...parseListQuery({}), ...overrides });

  function overLimit(q: ListQuery, limit: string, max: number): void {
    let caught: unknown;
    try {
      checkPlanQueryLimits(q, limits, 'free');
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(AppError);
    const error = caught as AppError;
    expect([error.status, error.code]).to.deep.equal([403, 'plan_limit_exceeded']);
    expect(error.details).to.deep.equal({ limit, max, plan: 'free' });
  }

  it('quantities at the plan maximum pass', () => {
    checkPlanQueryLimits(query({ filterCount: 5, limit: 50, offset: 1000 }), limits, 'free');
  });

  it('more filters than the plan allows is 403 plan_limit_exceeded (filters)', () => {
    const q = parseListQuery(Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`filter[f${i}]`, '1'])));
    overLimit(q, 'filters', 5);
  });

  it('a page size over the plan maximum is 403 (limit)', () => {
    overLimit(parseListQuery({ limit: '51' }), 'limit', 50);
  });

  it('an offset over the plan maximum is 403 (offset)', () => {
    overLimit(parseListQuery({ offset: '1001' }), 'offset', 1000);
  });
});

describe('list queries parsed once per shared query object', () => {
  const raw = (): RawQuery =>
    Object.freeze({
      'filter[category]': 'c1',
      'filter[price][gte]': '10',
      sort: '-price',
      select: 'name',
      limit: '5',
    });

  it('a frozen query object (a shared parse of its query string) is parsed once: the same ListQuery again', () => {
    const query = raw();
    const first = parseListQuery(query);
    expect(parseListQuery(query)).to.equal(first);
    // Another object of the same names and values: a parse of its own, equal to the first.
    const other = parseListQuery(raw());
    expect(other).to.not.equal(first);
    expect(other).to.deep.equal(first);
  });

  it('the kept parse is frozen all through: filter, sort, projection', () => {
    const parsed = parseListQuery(raw());
    for (const part of [parsed, parsed.filter, parsed.sort, parsed.sort[0], parsed.projection])
      expect(Object.isFrozen(part)).to.equal(true);
    const price = (parsed.filter as Record<string, unknown>).price;
    expect(Object.isFrozen(price)).to.equal(true);
  });

  it('an object not frozen (it may change) is parsed anew each time, and left unfrozen', () => {
    const query: RawQuery = { 'filter[category]': 'c1' };
    const first = parseListQuery(query);
    expect(Object.isFrozen(first)).to.equal(false);
    query['filter[category]'] = 'c2';
    expect(parseListQuery(query).filter).to.deep.equal(parseListQuery({ 'filter[category]': 'c2' }).filter);
    expect(parseListQuery(query).filter).to.not.deep.equal(first.filter);
  });

  it('a frozen query that fails to parse fails again each time', () => {
    const query = Object.freeze({ limit: 'ten' });
    invalid(() => parseListQuery(query), 'limit');
    invalid(() => parseListQuery(query), 'limit');
  });
});
