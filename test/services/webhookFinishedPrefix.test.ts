/**
 * The webhook dispatcher's saved position (finishedPrefix.ts): the feed's checkpoint becomes it
 * only while no event is open, and never replaces a newer event read in the meantime.
 */
import { expect } from 'chai';
import { FinishedPrefix } from '../../src/services/webhooks/finishedPrefix.js';

function prefix(): { events: FinishedPrefix; saved: string[] } {
  const saved: string[] = [];
  const events = new FinishedPrefix(async (token) => {
    saved.push(token);
    return true;
  });
  return { events, saved };
}

describe('webhook dispatcher: the position it saves while the feed is quiet', () => {
  it('saves the feed’s checkpoint when no event is open, once per new checkpoint', async () => {
    const { events, saved } = prefix();
    events.checkpoint(events.quietPoint('c1'));
    await events.save();
    events.checkpoint(events.quietPoint('c1'));
    await events.save();
    events.checkpoint(events.quietPoint('c2'));
    await events.save();
    expect(saved).to.deep.equal(['c1', 'c2']);
  });

  it('takes no checkpoint while an event is open: resuming past it would skip its deliveries', async () => {
    const { events, saved } = prefix();
    const open = events.read('e1');
    open.remaining = 1;
    expect(events.quietPoint('c1')).to.equal(null);
    open.remaining = 0;
    events.advance();
    await events.save();
    expect(saved).to.deep.equal(['e1']);
  });

  it('drops a checkpoint taken before an event read since: the event’s token is the newer position', async () => {
    const { events, saved } = prefix();
    const point = events.quietPoint('c1');
    events.read('e2');
    events.advance();
    events.checkpoint(point);
    await events.save();
    expect(saved).to.deep.equal(['e2']);
    expect(events.quietPoint(null)).to.equal(null);
  });
});
