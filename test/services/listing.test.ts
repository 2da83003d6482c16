/**
 * When a list page needs a count for `meta.total`: the page is fetched with one row more than
 * asked, so a page with nothing after it, full or not, gives the total by itself.
 */
import { expect } from 'chai';
import { pageOf } from '../../src/services/listing.js';

const rows = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('list pages and their total', () => {
  it('a full page with nothing after it gives the total: no count', () => {
    expect(pageOf(rows(20), 20, 40)).to.deep.equal({ data: rows(20), total: 60 });
  });

  it('a page with one row more than asked shows the page only, and needs a count', () => {
    expect(pageOf(rows(21), 20, 40)).to.deep.equal({ data: rows(20), total: null });
  });

  it('a short page gives the total; an empty first page is a total of 0', () => {
    expect(pageOf(rows(3), 20, 40)).to.deep.equal({ data: rows(3), total: 43 });
    expect(pageOf(rows(0), 20, 0)).to.deep.equal({ data: [], total: 0 });
  });

  it('an empty page past the end cannot tell how far the end is: it needs a count', () => {
    expect(pageOf(rows(0), 20, 40)).to.deep.equal({ data: [], total: null });
  });
});
