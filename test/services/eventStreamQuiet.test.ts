/**
 * What the SSE layer does with a store's quiet-collection position and with a feed that failed
 * for good (MongoDB: `ChangeSubscription.checkpoint()` and the end reason `unavailable`), over a
 * real change subscription that offers a position the way the MongoDB feed's does.
 */
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { EventIds } from '../../src/services/streams/eventIds.js';
import type { StreamOwner } from '../../src/services/streams/eventStream.js';
import { checkpointFrame, HEARTBEAT_FRAME } from '../../src/services/streams/sseFrames.js';
import { FeedSubscription } from '../../src/store/changeFeed/subscription.js';
import { quietOwner, startEventStream, subscriptionSettings } from '../support/eventStreams.js';

const scope = { projectId: 'prj_quiet', env: 'test' as const };
const ids = new EventIds(randomBytes(32)).forScope(scope);

/** A subscription whose store offers `position` as a checkpoint (null: none to offer). */
class PositionedSubscription extends FeedSubscription {
  position: string | null = null;

  checkpoint(): string | null {
    return this.position;
  }
}

function openStream() {
  const checkpoints: Array<[string | null, string]> = [];
  const owner: StreamOwner<null> = {
    ...quietOwner,
    checkpointed: (_stream, from, to) => checkpoints.push([from, to]),
  };
  const subscription = new PositionedSubscription(subscriptionSettings());
  const body = new PassThrough();
  let text = '';
  body.on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
  });
  const stream = startEventStream({ subscription, ids, body, owner, after: '7' });
  return { stream, subscription, checkpoints, text: () => text };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('a stream on a quiet collection (the store’s checkpoint position)', () => {
  it('sends the store’s position as a checkpoint at a heartbeat, once, and heartbeats after that', async () => {
    const s = openStream();
    s.subscription.position = '42';
    s.stream.heartbeat();
    await turn();
    expect(s.text().endsWith(checkpointFrame(ids.encode('42')))).to.equal(true);
    // The client's resume point moved from its Last-Event-ID to the position.
    expect(s.checkpoints).to.deep.equal([['7', '42']]);
    s.stream.heartbeat();
    await turn();
    expect(s.text().endsWith(HEARTBEAT_FRAME)).to.equal(true);
    expect(s.checkpoints).to.have.length(1);
    s.stream.close('shutdown');
  });

  it('heartbeats when the store offers no position (an event pending, or catching up)', async () => {
    const s = openStream();
    s.stream.heartbeat();
    await turn();
    expect(s.text().endsWith(HEARTBEAT_FRAME)).to.equal(true);
    expect(s.checkpoints).to.have.length(0);
    s.stream.close('shutdown');
  });

  it('closes resumably, saying why, when the feed is unavailable', async () => {
    const s = openStream();
    s.subscription.end('unavailable');
    await turn();
    expect(s.stream.closed).to.equal(true);
    expect(s.text()).to.match(
      /event: stream\.closed\ndata: \{"reason":"unavailable","message":"[^"]*Last-Event-ID/,
    );
  });
});
