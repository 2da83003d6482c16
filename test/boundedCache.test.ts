import { expect } from 'chai';
import { BoundedCache } from '../src/boundedCache.js';

describe('BoundedCache (memos bounded by forgetting everything when full)', () => {
  const filled = (capacity: number) => {
    const cache = new BoundedCache<number>(capacity);
    for (let i = 0; i < capacity; i++) cache.set(`k${i}`, i);
    return cache;
  };

  it('keeps exactly `capacity` distinct keys', () => {
    const cache = filled(5);
    expect(cache.size).to.equal(5);
    for (let i = 0; i < 5; i++) expect(cache.get(`k${i}`)).to.equal(i);
  });

  it('forgets everything on the first distinct key past `capacity`, then keeps that one', () => {
    const cache = filled(5);
    cache.set('new', 99);
    expect(cache.size).to.equal(1);
    expect(cache.get('k0')).to.equal(undefined);
    expect(cache.get('new')).to.equal(99);
  });

  it('replaces a key it holds without forgetting the others, even when full', () => {
    const cache = filled(5);
    cache.set('k4', 40);
    expect(cache.size).to.equal(5);
    expect(cache.get('k4')).to.equal(40);
    expect(cache.get('k0')).to.equal(0);
  });

  it('a deleted key frees its place', () => {
    const cache = filled(5);
    cache.delete('k2');
    cache.set('new', 99);
    expect(cache.size).to.equal(5);
    expect(cache.get('k0')).to.equal(0);
    expect(cache.has('k2')).to.equal(false);
    expect(cache.has('new')).to.equal(true);
  });

  it('holds keys that would be special on a plain object as plain keys', () => {
    const cache = new BoundedCache<string>(3);
    for (const key of ['__proto__', 'constructor', 'hasOwnProperty']) cache.set(key, key.toUpperCase());
    expect(cache.get('__proto__')).to.equal('__PROTO__');
    expect(cache.get('toString')).to.equal(undefined);
    expect(cache.size).to.equal(3);
  });

  describe('with a byte budget', () => {
    it('keeps entries up to exactly `maxBytes`, and forgets everything on the first byte past it', () => {
      const cache = new BoundedCache<number>(100, 30);
      cache.set('a', 1, 10);
      cache.set('b', 2, 20);
      expect(cache.size).to.equal(2);
      expect(cache.bytes).to.equal(30);
      cache.set('c', 3, 1);
      expect(cache.size).to.equal(1);
      expect(cache.get('a')).to.equal(undefined);
      expect(cache.get('c')).to.equal(3);
      expect(cache.bytes).to.equal(1);
    });

    it('keeps no entry larger than the budget, and forgets nothing for it', () => {
      const cache = new BoundedCache<number>(100, 30);
      cache.set('a', 1, 10);
      cache.set('huge', 2, 31);
      expect(cache.has('huge')).to.equal(false);
      expect(cache.get('a')).to.equal(1);
      cache.set('whole', 3, 20);
      expect(cache.bytes).to.equal(30);
    });

    it('a replaced or deleted entry gives its bytes back', () => {
      const cache = new BoundedCache<number>(100, 30);
      cache.set('a', 1, 25);
      cache.set('a', 2, 5);
      expect(cache.bytes).to.equal(5);
      cache.set('b', 3, 25);
      expect(cache.size).to.equal(2);
      cache.delete('b');
      expect(cache.bytes).to.equal(5);
      // A replacement too large for the budget leaves the key out, not its old value in.
      cache.set('a', 4, 31);
      expect(cache.has('a')).to.equal(false);
      expect(cache.bytes).to.equal(0);
    });
  });
});
