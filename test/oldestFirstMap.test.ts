/**
 * OldestFirstMap (src/oldestFirstMap.ts), the bounded map of the API-key cache, the sign-in
 * throttle, the compiled schemas and the prepared statements: at its capacity's edges, and
 * against an array kept oldest first under generated operations.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { OldestFirstMap } from '../src/oldestFirstMap.js';

function filled(capacity: number): OldestFirstMap<number> {
  const map = new OldestFirstMap<number>(capacity);
  for (let i = 0; i < capacity; i++) map.set(`k${i}`, i);
  return map;
}

/** Keys oldest first, by deleting the oldest until none is left. */
function drain<V>(map: OldestFirstMap<V>): string[] {
  const keys: string[] = [];
  for (let oldest = map.oldest; oldest; oldest = map.oldest) {
    keys.push(oldest.key);
    map.delete(oldest.key);
  }
  return keys;
}

describe('OldestFirstMap', () => {
  it('holds `capacity` entries, and the next one evicts exactly the oldest', () => {
    const map = filled(5);
    expect(map.size).to.equal(5);
    expect(map.oldest).to.deep.include({ key: 'k0', value: 0 });
    map.set('k5', 5);
    expect(map.size).to.equal(5);
    expect(map.has('k0')).to.equal(false);
    expect(drain(map)).to.deep.equal(['k1', 'k2', 'k3', 'k4', 'k5']);
  });

  it('moves a key set again to the newest end, with its new value, evicting nothing', () => {
    const map = filled(3);
    map.set('k0', 10);
    expect(map.size).to.equal(3);
    expect(map.get('k0')).to.equal(10);
    map.set('k3', 3);
    expect(drain(map)).to.deep.equal(['k2', 'k0', 'k3']);
  });

  it('puts a key deleted and set again at the newest end', () => {
    const map = filled(3);
    expect(map.delete('k0')).to.equal(true);
    expect(map.delete('k0')).to.equal(false);
    map.set('k0', 0);
    expect(drain(map)).to.deep.equal(['k1', 'k2', 'k0']);
  });

  it('keeps nothing at capacity 0, and takes any string as a key', () => {
    const none = new OldestFirstMap<number>(0);
    none.set('k', 1);
    expect([none.size, none.get('k'), none.oldest]).to.deep.equal([0, undefined, undefined]);
    const map = new OldestFirstMap<number>(2);
    map.set('__proto__', 1);
    map.set('constructor', 2);
    expect([map.get('__proto__'), map.get('constructor'), map.get('toString')]).to.deep.equal([
      1,
      2,
      undefined,
    ]);
  });

  it('deletes what deleteWhere is told to, neighbours and ends included, keeping the order of the rest', () => {
    const map = filled(6);
    map.deleteWhere((value) => value !== 2 && value !== 3);
    expect(drain(map)).to.deep.equal(['k2', 'k3']);
    const all = filled(3);
    all.deleteWhere(() => true);
    expect([all.size, all.oldest]).to.deep.equal([0, undefined]);
    all.set('again', 1);
    expect(drain(all)).to.deep.equal(['again']);
  });

  it('agrees with an array kept oldest first, through generated sets, deletions and evictions', () => {
    const key = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g');
    const step = fc.oneof(
      fc.record({ op: fc.constant('set' as const), key, value: fc.nat(9) }),
      fc.record({ op: fc.constant('delete' as const), key }),
      fc.record({ op: fc.constant('deleteWhere' as const), value: fc.nat(9) }),
    );
    fc.assert(
      fc.property(fc.nat(5), fc.array(step, { maxLength: 60 }), (capacity, steps) => {
        const map = new OldestFirstMap<number>(capacity);
        let model: [string, number][] = [];
        for (const s of steps) {
          if (s.op === 'set') {
            model = model.filter(([k]) => k !== s.key);
            model.push([s.key, s.value]);
            if (model.length > capacity) model.shift();
            map.set(s.key, s.value);
          } else if (s.op === 'delete') {
            const held = model.some(([k]) => k === s.key);
            model = model.filter(([k]) => k !== s.key);
            expect(map.delete(s.key)).to.equal(held);
          } else {
            model = model.filter(([, v]) => v !== s.value);
            map.deleteWhere((v) => v === s.value);
          }
          expect(map.size).to.equal(model.length);
          expect(map.oldest?.key).to.equal(model[0]?.[0]);
          for (const k of ['a', 'b', 'c', 'd', 'e', 'f', 'g'])
            expect(map.get(k)).to.equal(model.find(([held]) => held === k)?.[1]);
        }
        expect(drain(map)).to.deep.equal(model.map(([k]) => k));
      }),
      { numRuns: 300 },
    );
  });
});
