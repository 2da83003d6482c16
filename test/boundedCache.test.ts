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
});
