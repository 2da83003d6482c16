/**
 * The API-key cache's bound: an entry lives `ttlMs` from its look-up, use never extends it, and
 * whatever this process changes is evicted at once (including a look-up an eviction overtook).
 */
import { expect } from 'chai';
import { KeyCache } from '../../src/services/keyCache.js';
import type { ResolvedKey } from '../../src/store/port.js';

function resolved(keyId: string, accountId = 'acc_1', status: 'active' | 'revoked' = 'active'): ResolvedKey {
  const at = '2024-01-01T00:00:00.000Z';
  return {
    key: {
      id: keyId,
      projectId: 'prj_1',
      name: 'k',
      env: 'test',
      scope: 'read-write',
      config: {},
      status,
      keyHash: `hash-${keyId}`,
      hint: 'folio_sk_test_...abcd',
      createdAt: at,
      lastUsedAt: null,
      revokedAt: null,
      rotatedFrom: null,
      rules: null,
    },
    project: { id: 'prj_1', accountId, name: 'app', createdAt: at, allowedOrigins: null },
    account: { id: accountId, email: 'a@example.test', passwordHash: 'x', plan: 'free', createdAt: at },
  };
}

describe('API-key cache', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000_000;
  });

  it('serves a look-up for exactly ttlMs, however often it is used', () => {
    const cache = new KeyCache(1000, clock);
    cache.set('h', resolved('key_1'), cache.generation);
    now += 999;
    expect(cache.get('h')?.key.id).to.equal('key_1');
    cache.refresh('h', resolved('key_1'));
    now += 1;
    expect(cache.get('h')).to.equal(null);
  });

  it('caches nothing when ttlMs is 0, and never a revoked key', () => {
    const off = new KeyCache(0, clock);
    off.set('h', resolved('key_1'), off.generation);
    expect(off.get('h')).to.equal(null);
    const on = new KeyCache(1000, clock);
    on.set('h', resolved('key_1', 'acc_1', 'revoked'), on.generation);
    expect(on.get('h')).to.equal(null);
  });

  it('forgets a revoked or rotated key at once, and only that key', () => {
    const cache = new KeyCache(60_000, clock);
    cache.set('h1', resolved('key_1'), cache.generation);
    cache.set('h2', resolved('key_2'), cache.generation);
    cache.evictKey('key_1');
    expect(cache.get('h1')).to.equal(null);
    expect(cache.get('h2')?.key.id).to.equal('key_2');
  });

  it('forgets every key of an account whose plan changed', () => {
    const cache = new KeyCache(60_000, clock);
    cache.set('h1', resolved('key_1', 'acc_a'), cache.generation);
    cache.set('h2', resolved('key_2', 'acc_a'), cache.generation);
    cache.set('h3', resolved('key_3', 'acc_b'), cache.generation);
    cache.evictAccount('acc_a');
    expect([cache.get('h1'), cache.get('h2')]).to.deep.equal([null, null]);
    expect(cache.get('h3')?.key.id).to.equal('key_3');
  });

  it('drops a look-up that an eviction overtook (a revoke committed while it was in flight)', () => {
    const cache = new KeyCache(60_000, clock);
    const generation = cache.generation;
    cache.evictKey('key_1');
    cache.set('h', resolved('key_1'), generation);
    expect(cache.get('h')).to.equal(null);
    cache.set('h', resolved('key_1'), cache.generation);
    expect(cache.get('h')?.key.id).to.equal('key_1');
  });

  it('holds at most its maximum, dropping the oldest first', () => {
    const cache = new KeyCache(60_000, clock, 2);
    cache.set('h1', resolved('key_1'), cache.generation);
    cache.set('h2', resolved('key_2'), cache.generation);
    cache.set('h3', resolved('key_3'), cache.generation);
    expect(cache.size).to.equal(2);
    expect(cache.get('h1')).to.equal(null);
    expect(cache.get('h3')?.key.id).to.equal('key_3');
  });

  it('when full, drops the oldest look-up however recently it was read; a fresh look-up is the newest', () => {
    const cache = new KeyCache(60_000, clock, 2);
    cache.set('h1', resolved('key_1'), cache.generation);
    cache.set('h2', resolved('key_2'), cache.generation);
    expect(cache.get('h1')?.key.id).to.equal('key_1');
    cache.refresh('h1', resolved('key_1'));
    cache.set('h3', resolved('key_3'), cache.generation);
    expect([cache.get('h1'), cache.get('h2')?.key.id]).to.deep.equal([null, 'key_2']);
    cache.set('h2', resolved('key_2'), cache.generation);
    cache.set('h4', resolved('key_4'), cache.generation);
    expect([cache.get('h3'), cache.get('h2')?.key.id]).to.deep.equal([null, 'key_2']);
  });
});
