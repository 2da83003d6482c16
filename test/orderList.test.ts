/**
 * The order the bounded caches evict by (src/orderList.ts): OrderList must agree with an array
 * kept in the same order, whatever is added and removed.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { type Linked, OrderList } from '../src/orderList.js';

interface Node extends Linked<Node> {
  n: number;
}

/** Oldest to newest, by following the links from the oldest. */
function walk(list: OrderList<Node>): number[] {
  const out: number[] = [];
  for (let node = list.oldest; node; node = node.newer) out.push(node.n);
  return out;
}

describe('OrderList', () => {
  it('keeps the order an array keeps, through generated pushes and removals', () => {
    const step = fc.oneof(
      fc.record({ op: fc.constant('push' as const) }),
      fc.record({ op: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ op: fc.constant('renew' as const), at: fc.nat() }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 100 }), (steps) => {
        const list = new OrderList<Node>();
        const model: Node[] = [];
        let next = 0;
        for (const s of steps) {
          if (s.op === 'push') {
            const node: Node = { n: next++, older: null, newer: null };
            list.push(node);
            model.push(node);
          } else if (model.length > 0) {
            const [node] = model.splice(s.at % model.length, 1) as [Node];
            list.remove(node);
            // Renewed: to the newest end, as a cache hit moves an entry.
            if (s.op === 'renew') {
              list.push(node);
              model.push(node);
            }
          }
          expect(walk(list)).to.deep.equal(model.map((node) => node.n));
          expect(list.size).to.equal(model.length);
          expect(list.oldest?.n).to.equal(model[0]?.n);
        }
      }),
      { numRuns: 300 },
    );
  });
});
