/**
 * The streams' shared heartbeat schedule (src/services/streams/heartbeatWheel.ts): one wheel,
 * every member due once per turn of it, spread over its buckets.
 */
import { expect } from 'chai';
import { HeartbeatWheel } from '../../src/services/streams/heartbeatWheel.js';

/** The turn numbers (1-based) at which `member` is due, over `turns` turns. */
function dueTurns<T>(wheel: HeartbeatWheel<T>, member: T, turns: number): number[] {
  const due: number[] = [];
  for (let t = 1; t <= turns; t++) if (wheel.turn().includes(member)) due.push(t);
  return due;
}

describe('stream heartbeat wheel', () => {
  it('beats a member every `slots` turns, the first time on the `slots`-th turn after it joined', () => {
    const wheel = new HeartbeatWheel<string>(4);
    wheel.add('a');
    expect(dueTurns(wheel, 'a', 12)).to.deep.equal([4, 8, 12]);
  });

  it('beats a member first on the `slots`-th turn after it joined, wherever the wheel stands', () => {
    for (let before = 0; before < 7; before++) {
      const wheel = new HeartbeatWheel<number>(5);
      for (let t = 0; t < before; t++) wheel.turn();
      wheel.add(1);
      expect(dueTurns(wheel, 1, 10), `joined after ${before} turns`).to.deep.equal([5, 10]);
    }
  });

  it('spreads members that join at different turns over different turns', () => {
    const wheel = new HeartbeatWheel<string>(3);
    wheel.add('a');
    wheel.turn();
    wheel.add('b');
    wheel.turn();
    wheel.add('c');
    const due = [wheel.turn(), wheel.turn(), wheel.turn()];
    expect(due).to.deep.equal([['a'], ['b'], ['c']]);
  });

  it('forgets a deleted member; adding twice keeps one entry', () => {
    const wheel = new HeartbeatWheel<string>(2);
    wheel.add('a');
    wheel.add('a');
    wheel.add('b');
    expect(wheel.size).to.equal(2);
    wheel.delete('a');
    wheel.delete('a');
    expect(wheel.size).to.equal(1);
    expect([wheel.turn(), wheel.turn()]).to.deep.equal([[], ['b']]);
  });

  it('hands out a copy, so a member may leave while its bucket is beating', () => {
    const wheel = new HeartbeatWheel<string>(1);
    wheel.add('a');
    wheel.add('b');
    const due = wheel.turn();
    for (const member of due) wheel.delete(member);
    expect(due).to.deep.equal(['a', 'b']);
    expect(wheel.turn()).to.deep.equal([]);
  });

  it('refuses a wheel without buckets', () => {
    expect(() => new HeartbeatWheel(0)).to.throw(RangeError);
    expect(() => new HeartbeatWheel(1.5)).to.throw(RangeError);
  });
});
