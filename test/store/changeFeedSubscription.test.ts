/**
 * The subscription both stores' change feeds share (src/store/changeFeed/): bounded queue,
 * overflow, and the hand-over from a catch-up read of history to the live fan-out, checked
 * against every interleaving fast-check finds. The history and the live source here are plain
 * in-memory sequences; the stores' own are exercised by the conformance suite.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { FeedEndError, FeedSubscription, type HistoryPage } from '../../src/store/changeFeed/subscription.js';
import type { ChangeEvent } from '../../src/store/port.js';
import { firstVersion } from './fixtures.js';

const token = (n: number) => String(n).padStart(6, '0');
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function event(n: number): ChangeEvent {
  const document = firstVersion({ n }, `doc_${n}`);
  return {
    token: token(n),
    scope: { projectId: 'prj_x', env: 'test' },
    type: 'created',
    collection: 'things',
    documentId: document._id,
    document,
    timestamp: document.$createdAt,
  };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Events 1..`total`, of which `committed` exist so far; reads wait until the test serves them. */
class World {
  committed: number;
  readonly waiting: Array<{
    max: number;
    resolve: (page: HistoryPage) => void;
    reject: (e: unknown) => void;
  }> = [];
  cursorClosed = false;
  #pos: number;

  constructor(
    readonly total: number,
    after: number,
    start: number,
  ) {
    this.#pos = after;
    this.committed = Math.max(after, start);
  }

  read(max: number): Promise<HistoryPage> {
    return new Promise((resolve, reject) => this.waiting.push({ max, resolve, reject }));
  }

  /** Answer the pending read: committed events after the cursor, up to `pageCap`. */
  serve(pageCap: number): boolean {
    const request = this.waiting.shift();
    if (!request) return false;
    const max = Math.min(request.max, pageCap);
    const events: ChangeEvent[] = [];
    while (events.length < max && this.#pos < this.committed) events.push(event(++this.#pos));
    const scannedTo = events.length < max ? this.committed : this.#pos;
    request.resolve({ events, scannedTo: token(scannedTo) });
    return true;
  }
}

describe('change feed subscription: catch-up and hand-over', () => {
  it('delivers every event after the token exactly once, in order, however history and live interleave', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 12 }), // events in all
        fc.nat(), // token
        fc.nat(), // the live source's start
        fc.boolean(), // is its position known when the subscription joins?
        fc.array(fc.constantFrom('commit', 'live', 'serve', 'reveal', 'take'), { maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }), // history page size
        async (total, tokenSeed, startSeed, knownAtJoin, schedule, pageCap) => {
          const after = tokenSeed % (total + 1);
          const start = startSeed % (total + 1);
          const world = new World(total, after, start);
          let livePublished = start;
          let revealed = knownAtJoin;
          const sub = new FeedSubscription({ bufferLimit: 1000, compare, onFinish: () => {} });
          const got: string[] = [];
          sub.catchUp(
            { read: (max) => world.read(max), close: () => (world.cursorClosed = true) },
            token(after),
            () => (revealed ? token(livePublished) : null),
          );
          const step = async (action: string) => {
            if (action === 'commit' && world.committed < total) world.committed += 1;
            else if (action === 'live' && livePublished < world.committed)
              sub.deliver(event(++livePublished));
            else if (action === 'serve') world.serve(pageCap);
            else if (action === 'reveal') revealed = true;
            else if (action === 'take') for (let e = sub.take(); e; e = sub.take()) got.push(e.token);
            await tick();
          };
          for (const action of schedule) await step(action);
          // Then everything commits and is published, and reads are served (the consumer taking
          // each page, as the next is read only then) until it joins.
          revealed = true;
          while (world.committed < total) await step('commit');
          while (livePublished < total) await step('live');
          for (let i = 0; i < 100 && sub.catchingUp; i++) {
            await step('serve');
            await step('take');
          }
          expect(sub.catchingUp).to.equal(false);
          expect(world.cursorClosed).to.equal(true);
          await step('take');
          const expected = Array.from({ length: total - after }, (_, i) => token(after + 1 + i));
          expect(got).to.deep.equal(expected);
          expect(sub.pending).to.equal(0);
          sub.close();
        },
      ),
      { seed: 20240611, numRuns: 300 },
    );
  });

  it('joins as soon as history has been scanned past the live position, with no event after it', async () => {
    const world = new World(3, 1, 3);
    const sub = new FeedSubscription({ bufferLimit: 10, compare, onFinish: () => {} });
    let ready = false;
    void sub.ready.then(() => (ready = true));
    sub.catchUp({ read: (max) => world.read(max), close: () => (world.cursorClosed = true) }, token(1), () =>
      token(3),
    );
    await tick();
    world.serve(10);
    await tick();
    expect(ready).to.equal(true);
    expect(sub.catchingUp).to.equal(false);
    expect(world.cursorClosed).to.equal(true);
    expect(sub.pending).to.equal(2);
  });

  it('ends with the reason a history cursor gives, and with store_closed for any other failure', async () => {
    for (const [failure, reason] of [
      [new FeedEndError('history_lost'), 'history_lost'],
      [new FeedEndError('invalid_token'), 'invalid_token'],
      [new Error('database closed'), 'store_closed'],
    ] as const) {
      const sub = new FeedSubscription({ bufferLimit: 10, compare, onFinish: () => {} });
      let closed = false;
      sub.catchUp(
        { read: () => Promise.reject(failure), close: () => (closed = true) },
        token(0),
        () => null,
      );
      await sub.ready;
      expect(sub.endedBy).to.equal(reason);
      expect(closed).to.equal(true);
    }
  });

  it('counts held live events against the limit while catching up', async () => {
    const world = new World(10, 0, 0);
    const sub = new FeedSubscription({ bufferLimit: 3, compare, onFinish: () => {} });
    sub.catchUp({ read: (max) => world.read(max), close: () => {} }, token(0), () => token(0));
    for (let n = 1; n <= 3; n++) sub.deliver(event(n));
    expect(sub.endedBy).to.equal(null);
    sub.deliver(event(4));
    expect(sub.endedBy).to.equal('overflow');
    expect(sub.pending).to.equal(0);
  });

  it('reads history a page at a time, the next once the consumer took the last one or was let go on (holdHistory)', async () => {
    const world = new World(50, 0, 50);
    const sub = new FeedSubscription({ bufferLimit: 4, compare, onFinish: () => {} });
    sub.catchUp({ read: (max) => world.read(max), close: () => {} }, token(0), () => token(50));
    await tick();
    expect(world.waiting[0]?.max).to.equal(4);
    world.serve(100);
    await tick();
    // Four queued: no further read until the consumer takes them all.
    expect(world.waiting).to.have.length(0);
    expect(sub.endedBy).to.equal(null);
    for (let n = 0; n < 3; n++) sub.take();
    await tick();
    expect(world.waiting).to.have.length(0);
    // Taken, but its client has not taken it yet: the consumer holds the history back.
    sub.holdHistory(true);
    sub.take();
    await tick();
    expect(world.waiting).to.have.length(0);
    sub.holdHistory(false);
    await tick();
    expect(world.waiting).to.have.length(1);
    sub.close();
  });

  it('take() hands out queued events without waiting; onQueued is called as each is queued and at the end', () => {
    let calls = 0;
    let seenInCall: string[] = [];
    const sub = new FeedSubscription({ bufferLimit: 3, compare, onFinish: () => {} });
    sub.onQueued(() => {
      calls += 1;
      // Called synchronously, with the event already takeable.
      for (let e = sub.take(); e !== undefined; e = sub.take()) seenInCall.push(e.token);
    });
    expect(sub.take()).to.equal(undefined);
    sub.deliver(event(1));
    sub.deliver(event(2));
    expect(seenInCall).to.deep.equal([token(1), token(2)]);
    expect(calls).to.equal(2);
    // A consumer that stops taking: the limit still holds, and the end is signalled.
    sub.onQueued(() => {
      calls += 1;
    });
    seenInCall = [];
    for (let n = 3; n <= 6; n++) sub.deliver(event(n));
    expect(sub.endedBy).to.equal('overflow');
    expect(sub.take()).to.equal(undefined);
    // Three queued (3, 4, 5), then the fourth overflowed it: the end is the last call.
    expect(calls).to.equal(2 + 3 + 1);
  });

  it('is ready at once when made ready before anyone waits, and resolves a waiter made earlier', async () => {
    const early = new FeedSubscription({ bufferLimit: 3, compare, onFinish: () => {} });
    let resolved = false;
    void early.ready.then(() => {
      resolved = true;
    });
    await tick();
    expect(resolved).to.equal(false);
    early.markReady();
    await tick();
    expect(resolved).to.equal(true);
    const late = new FeedSubscription({ bufferLimit: 3, compare, onFinish: () => {} });
    late.markReady();
    await late.ready;
  });

  it('hands its key back to one shared onFinish', () => {
    const finished: Array<string | null> = [];
    const onFinish = (s: FeedSubscription) => finished.push(s.key);
    new FeedSubscription({ key: 'a', bufferLimit: 3, compare, onFinish }).close();
    new FeedSubscription({ bufferLimit: 3, compare, onFinish }).end('store_closed');
    expect(finished).to.deep.equal(['a', null]);
  });
});
