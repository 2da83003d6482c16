/**
 * The byte bound of one stream (`streams.bufferBytes`), at its boundary: an EventStream over a
 * real change subscription writes to a real Writable that never completes a write (a client
 * that reads nothing), so every byte written stays counted in `writableLength`.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { EventIds } from '../../src/services/streams/eventIds.js';
import { documentFrame, retryFrame } from '../../src/services/streams/sseFrames.js';
import { FeedSubscription } from '../../src/store/changeFeed/subscription.js';
import type { ChangeEvent } from '../../src/store/port.js';
import { startEventStream, subscriptionSettings } from '../support/eventStreams.js';

const scope = { projectId: 'prj_bytes', env: 'test' as const };
const ids = new EventIds(randomBytes(32)).forScope(scope);
const RETRY_MS = 100;

function event(n: number, size: number): ChangeEvent {
  const at = new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();
  return {
    token: String(n),
    scope,
    type: 'created',
    collection: 'c',
    documentId: `d${n}`,
    document: { _id: `d${n}`, body: 'x'.repeat(size), $createdAt: at, $updatedAt: at, $version: 1 },
    timestamp: at,
  };
}

/** A client that never reads: no write completes, so every byte stays counted. */
class NeverReads extends Writable {
  /** Everything written, in order (Writable hands only the first write to `_write`). */
  readonly chunks: Buffer[] = [];

  constructor() {
    super();
    const write = this.write.bind(this);
    this.write = ((chunk: string | Buffer, ...rest: never[]) => {
      this.chunks.push(Buffer.from(chunk));
      return write(chunk, ...rest);
    }) as typeof this.write;
  }

  override _write(): void {}

  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
}

function openStream(bufferBytes: number) {
  const subscription = new FeedSubscription(subscriptionSettings());
  const body = new NeverReads();
  const stream = startEventStream({ subscription, ids, body, bufferBytes, retryMs: RETRY_MS });
  return { stream, subscription, body };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('a stream’s unread bytes (streams.bufferBytes)', () => {
  const events = [event(1, 5000), event(2, 70_000), event(3, 10)];
  const sizes = events.map((e) => documentFrame(e, 'p', ids).length);
  const upToTwo = Buffer.byteLength(retryFrame(RETRY_MS)) + sizes[0]! + sizes[1]!;

  it('keeps a client whose unread bytes reach the bound exactly, and closes it one byte past', async () => {
    const exact = openStream(upToTwo);
    for (const e of events.slice(0, 2)) exact.subscription.deliver(e);
    await turn();
    expect(exact.stream.closed).to.equal(false);
    expect(exact.body.writableLength).to.equal(upToTwo);
    exact.stream.close('shutdown');

    const under = openStream(upToTwo - 1);
    for (const e of events.slice(0, 2)) under.subscription.deliver(e);
    await turn();
    expect(under.stream.closed).to.equal(true);
    // What it was sent, then why it was closed; nothing after.
    under.subscription.deliver(events[2]!);
    await turn();
    const text = under.body.text;
    expect(text.match(/^event: document\.created$/gm)).to.have.length(2);
    expect(
      text.endsWith(
        '"reason":"overflow","message":"This client fell too far behind (more than ' +
          `${upToTwo - 1} bytes unread, or 1000 events); reconnect with Last-Event-ID to resume."}\n\n`,
      ),
    ).to.equal(true);
  });

  it('counts bytes, not events: one large event closes a stream that many small ones do not', async () => {
    const small = openStream(20_000);
    for (let n = 10; n < 15; n++) small.subscription.deliver(event(n, 100));
    await turn();
    expect(small.stream.closed).to.equal(false);
    small.stream.close('shutdown');
    const large = openStream(20_000);
    large.subscription.deliver(event(20, 30_000));
    await turn();
    expect(large.stream.closed).to.equal(true);
  });
});
