import { expect } from 'chai';
import { AppError } from '../../src/errors.js';
import { parseFilterParams } from '../../src/query/filterParams.js';
import { keyRulesSchema } from '../../src/services/apiKeys.js';
import { compileKeyAccess, inView, requireCollection, withinView } from '../../src/services/keyAccess.js';

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
  throw new Error('expected an AppError');
}

describe('key access (rules compiled once per key)', () => {
  it('a key without rules reaches every collection, up to its scope', () => {
    expect(compileKeyAccess(null, 'read-write').collection('any')).to.deep.equal({
      level: 'write',
      filter: null,
    });
    expect(compileKeyAccess(null, 'read-only').collection('any').level).to.equal('read');
    expect(compileKeyAccess(null, 'read-write').restricted).to.equal(false);
  });

  it('a prefix pattern reaches its prefix exactly; the first rule naming a collection decides', () => {
    const access = compileKeyAccess(
      [
        { collections: ['public_drafts'], access: 'read', filter: { published: true } },
        { collections: ['public_*', 'posts'], access: 'write' },
      ],
      'read-write',
    );
    expect(access.collection('public_').level).to.equal('write');
    expect(access.collection('public_x').level).to.equal('write');
    expect(access.collection('public').level, 'one character short').to.equal('none');
    expect(access.collection('publicx').level).to.equal('none');
    expect(access.collection('posts').level).to.equal('write');
    expect(access.collection('posts2').level, 'an exact name is no prefix').to.equal('none');
    expect(access.collection('public_drafts').level).to.equal('read');
  });

  it('a rule filter compiles to the filter the same URL parameters give', () => {
    const access = compileKeyAccess(
      [
        {
          collections: ['posts'],
          access: 'read',
          filter: { published: true, n: { gte: 3 }, team: { in: ['a', 'b,c'] } },
        },
      ],
      'read-write',
    );
    const url = parseFilterParams({ 'filter[published]': 'true', 'filter[n][gte]': '3' }).filter;
    const posts = access.collection('posts');
    expect((posts.filter as { $and: unknown[] }).$and.slice(0, 2)).to.deep.equal(
      (url as { $and: unknown[] }).$and,
    );
    expect(inView(posts, { _id: 'a', published: true, n: 3, team: 'b,c' })).to.equal(true);
    expect(inView(posts, { _id: 'a', published: true, n: 2, team: 'a' })).to.equal(false);
    expect(withinView(posts, {})).to.equal(posts.filter);
    expect(withinView(posts, { x: { $in: [1] } })).to.deep.equal({
      $and: [posts.filter, { x: { $in: [1] } }],
    });
  });

  it('out of reach is 404 whatever the collection; in view but not writable is 403 collection_access', () => {
    const access = compileKeyAccess([{ collections: ['posts'], access: 'read' }], 'read-write');
    expect(thrown(() => requireCollection(access, 'customers', 'read'))).to.include({ status: 404 });
    const denied = thrown(() => requireCollection(access, 'posts', 'write'));
    expect(denied).to.include({ status: 403, code: 'collection_access' });
    expect(denied.details).to.deep.equal({ collection: 'posts', needed: 'write' });
    expect(requireCollection(access, 'posts', 'read').level).to.equal('read');
  });

  it('rules are validated: names, patterns, filters, metadata, bounds', () => {
    const ok = (rules: unknown) => keyRulesSchema.safeParse(rules).success;
    expect(
      ok([{ collections: ['posts', 'public_*', '*'], access: 'read', filter: { a: { in: [1, 'x'] } } }]),
    ).to.equal(true);
    expect(ok(null)).to.equal(true);
    expect(ok([{ collections: ['pub*lic'], access: 'read' }])).to.equal(false);
    expect(ok([{ collections: ['_x'], access: 'read' }])).to.equal(false);
    expect(ok([{ collections: [], access: 'read' }])).to.equal(false);
    expect(ok([{ collections: ['a'], access: 'admin' }])).to.equal(false);
    expect(ok([{ collections: ['a'], access: 'read', filter: { n: { near: 1 } } }])).to.equal(false);
    expect(ok([{ collections: ['a'], access: 'read', filter: { $version: 1 } }])).to.equal(false);
    expect(ok([{ collections: ['a'], access: 'read', filter: { n: { gte: [1, 2] } } }])).to.equal(false);
    expect(ok(Array.from({ length: 21 }, () => ({ collections: ['a'], access: 'read' })))).to.equal(false);
  });
});
