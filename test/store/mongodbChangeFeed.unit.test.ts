/**
 * The MongoDB change feed's fault isolation and resume decisions, without a server: how each
 * stream failure is classified, split events joined, the in-memory ring's coverage, the
 * catch-up slots, the pause after failures, checkpoints, and the throttled warnings.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { type ChangeStreamDocument, MongoNetworkError, MongoServerError, Timestamp } from 'mongodb';
import { FeedEndError } from '../../src/store/changeFeed/subscription.js';
import { CatchUpLimiter, catchUpDecision } from '../../src/store/mongodb/changes/catchUpLimiter.js';
import {
  changeStreamPipeline,
  compareTokens,
  type FragmentJoin,
  joinFragment,
  probePipeline,
  supportsSplitLargeEvent,
} from '../../src/store/mongodb/changes/changeEvents.js';
import { checkpointToken, restartDelayMs } from '../../src/store/mongodb/changes/changes.js';
import { helloTime } from '../../src/store/mongodb/changes/clusterClock.js';
import { sourceEnd } from '../../src/store/mongodb/changes/clusterSource.js';
import { EventRing, eventBytes, resumeSource } from '../../src/store/mongodb/changes/eventRing.js';
import { recoveryStep } from '../../src/store/mongodb/changes/feedRecovery.js';
import {
  afterProbeMiss,
  endReasonOf,
  failureStep,
  PROBE_ATTEMPTS,
} from '../../src/store/mongodb/changes/reopeningStream.js';
import { classifyStreamError, isOversizedEvent } from '../../src/store/mongodb/changes/streamErrors.js';
import { WarningThrottle } from '../../src/store/mongodb/changes/warningThrottle.js';
import { isPoolWaitTimeout, unavailability } from '../../src/store/mongodb/database/serverErrors.js';
import { checkServer, readPreferenceProblem } from '../../src/store/mongodb/startup/serverCheck.js';
import type { ChangeEvent } from '../../src/store/port.js';
import type { StoredDocument } from '../../src/store/storedForm.js';

type Change = ChangeStreamDocument<StoredDocument>;

const server = (code: number, message = 'x', codeName?: string) =>
  new MongoServerError({ message, code, codeName });
const shared = { clientToken: false, established: true };
const fresh = { clientToken: true, established: false };

describe('MongoDB change feed: which failures reopen, skip, or stop', () => {
  it('steps over an event over 16 MB (BSONObjectTooLarge, 10334) instead of reopening at it for ever', () => {
    expect(classifyStreamError(server(10334, 'BSONObj size: 17000000 is invalid'), shared)).to.equal(
      'skip_event',
    );
    expect(classifyStreamError(server(99999, 'x', 'BSONObjectTooLarge'), shared)).to.equal('skip_event');
    // Even on a client's first batch: the token was read, the event after it is the problem.
    expect(classifyStreamError(server(10334), fresh)).to.equal('skip_event');
    expect(isOversizedEvent(server(10335))).to.equal(false);
  });

  it('stops on errors reopening cannot clear: Unauthorized after a role change, a refused pipeline', () => {
    for (const code of [13, 18, 40324, 280, 2]) {
      expect(classifyStreamError(server(code), shared), String(code)).to.equal('fatal');
    }
    expect(endReasonOf('fatal')).to.equal('unavailable');
    expect(endReasonOf('history_lost')).to.equal('history_lost');
    expect(endReasonOf('invalid_token')).to.equal('invalid_token');
  });

  it('keeps lost history and refused tokens apart from failures of the stream itself', () => {
    expect(classifyStreamError(server(286), shared)).to.equal('history_lost');
    expect(classifyStreamError(server(260), shared)).to.equal('invalid_token');
    expect(classifyStreamError(server(13), fresh)).to.equal('invalid_token');
  });

  it('retries transient conditions, including a killed cursor and killOp', () => {
    for (const error of [
      new MongoNetworkError('reset'),
      server(237, 'cursor killed'),
      server(11601, 'interrupted'),
      server(134, 'majority not available yet'),
      server(202, 'network interface exceeded time limit'),
    ]) {
      expect(classifyStreamError(error, shared), error.message).to.equal('retry');
    }
  });
});

describe('MongoDB change feed: what a failed read leads to', () => {
  const reading = { closingIn: false, established: true, canProbe: true, afterUnreadable: false };
  const closingIn = { ...reading, closingIn: true };

  it('closes in on an oversized event, then probes it; without a probe it ends', () => {
    expect(failureStep('skip_event', reading)).to.equal('close_in');
    expect(failureStep('skip_event', closingIn)).to.equal('probe');
    expect(failureStep('skip_event', { ...reading, canProbe: false })).to.equal('end');
  });

  it('treats another server error on a reading stream as possibly one event’s: the probe decides', () => {
    expect(failureStep('fatal', reading)).to.equal('close_in');
    expect(failureStep('fatal', closingIn)).to.equal('probe');
    // Before the stream read anything from its start, the error is the stream's.
    expect(failureStep('fatal', { ...reading, established: false })).to.equal('end');
    // Right after stepping over one such event: two in a row are the stream's failure.
    expect(failureStep('fatal', { ...closingIn, afterUnreadable: true })).to.equal('end');
    expect(failureStep('skip_event', { ...closingIn, afterUnreadable: true })).to.equal('probe');
  });

  it('retries transient failures and ends on lost history or a refused token', () => {
    expect(failureStep('retry', closingIn)).to.equal('retry');
    expect(failureStep('history_lost', closingIn)).to.equal('end');
    expect(failureStep('invalid_token', reading)).to.equal('end');
  });

  it('probes an oversized event at most PROBE_ATTEMPTS times; another error ends at the first miss', () => {
    expect(afterProbeMiss('skip_event', 1)).to.equal('retry');
    expect(afterProbeMiss('skip_event', PROBE_ATTEMPTS - 1)).to.equal('retry');
    expect(afterProbeMiss('skip_event', PROBE_ATTEMPTS)).to.equal('end');
    expect(afterProbeMiss('fatal', 1)).to.equal('end');
    expect(endReasonOf('skip_event')).to.equal('unavailable');
  });

  it('ends the shared stream’s subscriptions as lost history only when its history is lost', () => {
    const cause = new Error('not authorized');
    expect(sourceEnd(new FeedEndError('history_lost'), null)).to.deep.equal({
      reason: 'history_lost',
      failure: null,
    });
    expect(sourceEnd(new FeedEndError('unavailable'), cause)).to.deep.equal({
      reason: 'unavailable',
      failure: cause,
    });
    const bug = new TypeError('cannot read properties of undefined');
    expect(sourceEnd(bug, null)).to.deep.equal({ reason: 'unavailable', failure: bug });
  });
});

describe('MongoDB change feed: events over 16 MB', () => {
  it('asks the server to split them only where it can (7.0+, 6.0.9+), as the last stage', () => {
    expect(supportsSplitLargeEvent([6, 0, 8])).to.equal(false);
    expect(supportsSplitLargeEvent([6, 0, 9])).to.equal(true);
    expect(supportsSplitLargeEvent([6, 1, 0])).to.equal(true);
    expect(supportsSplitLargeEvent([7, 0, 0])).to.equal(true);
    expect(supportsSplitLargeEvent([5, 0, 30])).to.equal(false);
    expect(supportsSplitLargeEvent(null)).to.equal(false);
    const target = { kind: 'all', prefix: 'folio' } as const;
    expect(changeStreamPipeline(target, { splitLargeEvents: true }).at(-1)).to.deep.equal({
      $changeStreamSplitLargeEvent: {},
    });
    expect(JSON.stringify(changeStreamPipeline(target))).not.to.include('Split');
  });

  it('probes an oversized event with its large fields projected away, the same events matched', () => {
    const target = { kind: 'collection', db: 'folio_p_live', collection: 'notes' } as const;
    const probe = probePipeline(target);
    expect(probe.slice(0, -1)).to.deep.equal(changeStreamPipeline(target));
    const project = probe.at(-1)!.$project as Record<string, number>;
    expect(project).to.include({ _id: 1, operationType: 1, ns: 1, documentKey: 1 });
    expect(project).not.to.have.property('fullDocument');
    expect(project).not.to.have.property('fullDocumentBeforeChange');
    expect(project).not.to.have.property('updateDescription');
  });

  const fragment = (n: number, of: number, fields: Record<string, unknown>): Change =>
    ({
      _id: { _data: `82${String(n).padStart(4, '0')}` },
      splitEvent: { fragment: n, of },
      ...fields,
    }) as never;

  it('joins the fragments back into one event whose token is the last fragment’s', () => {
    let join: FragmentJoin | null = null;
    const first = joinFragment(
      join,
      fragment(1, 3, { operationType: 'update', ns: { db: 'd', coll: 'c' } }),
      'P0',
    );
    expect(first.kind).to.equal('partial');
    join = first.kind === 'partial' ? first.join : null;
    expect(join?.before).to.equal('P0');
    const second = joinFragment(join, fragment(2, 3, { fullDocument: { _id: 'a', big: 'x' } }), 'P1');
    join = second.kind === 'partial' ? second.join : null;
    // The position before the event stays the one before its first fragment.
    expect(join?.before).to.equal('P0');
    const last = joinFragment(join, fragment(3, 3, { fullDocumentBeforeChange: { _id: 'a' } }), 'P2');
    expect(last.kind).to.equal('joined');
    if (last.kind !== 'joined') return;
    expect(last.change).to.deep.equal({
      _id: { _data: '820003' },
      operationType: 'update',
      ns: { db: 'd', coll: 'c' },
      fullDocument: { _id: 'a', big: 'x' },
      fullDocumentBeforeChange: { _id: 'a' },
    });
  });

  it('passes whole events through, and refuses fragments that do not continue the join', () => {
    expect(
      joinFragment(null, { _id: { _data: '82' }, operationType: 'insert' } as never, null).kind,
    ).to.equal('whole');
    // Resumed half-way: fragment 2 with nothing before it.
    expect(joinFragment(null, fragment(2, 3, {}), null).kind).to.equal('broken');
    const one = joinFragment(null, fragment(1, 3, {}), null);
    const join = one.kind === 'partial' ? one.join : null;
    expect(joinFragment(join, fragment(3, 3, {}), null).kind).to.equal('broken');
    expect(joinFragment(join, fragment(2, 4, {}), null).kind).to.equal('broken');
    expect(joinFragment(null, fragment(1, 1, { operationType: 'insert' }), null).kind).to.equal('joined');
  });
});

const token = (n: number) => n.toString(16).toUpperCase().padStart(8, '0');
function event(n: number, size = 10): ChangeEvent {
  return {
    token: token(n),
    scope: { projectId: 'p', env: 'live' },
    type: 'created',
    collection: 'c',
    documentId: String(n),
    document: { _id: String(n), pad: 'x'.repeat(size) } as never,
    timestamp: '2026-01-01T00:00:00.000Z',
  };
}

describe('MongoDB change feed: the in-memory ring of the shared stream', () => {
  it('serves a resume from the ring exactly when the ring covers its token', () => {
    expect(resumeSource(token(5), token(3), token(9), compareTokens)).to.equal('ring');
    expect(resumeSource(token(3), token(3), token(9), compareTokens)).to.equal('ring');
    expect(resumeSource(token(9), token(3), token(9), compareTokens)).to.equal('ring');
    expect(resumeSource(token(2), token(3), token(9), compareTokens)).to.equal('catch_up');
    // Ahead of this instance (or forged): the cluster checks it.
    expect(resumeSource(token(10), token(3), token(9), compareTokens)).to.equal('catch_up');
    expect(resumeSource(token(5), null, token(9), compareTokens)).to.equal('catch_up');
  });

  it('returns the events after a token for one key, and how far it read', () => {
    const ring = new EventRing(1_000_000, compareTokens);
    ring.advance(token(1));
    for (let n = 2; n <= 10; n++) {
      ring.push({ token: token(n), key: n % 2 === 0 ? 'db.even' : 'db.odd', event: event(n), bytes: 10 });
    }
    ring.advance(token(12));
    const even = ring.read(token(4), 'db.even', 100);
    expect(even?.entries.map((e) => e.token)).to.deep.equal([6, 8, 10].map(token));
    expect(even?.scannedTo).to.equal(token(12));
    const page = ring.read(token(1), null, 3);
    expect(page?.entries.map((e) => e.token)).to.deep.equal([2, 3, 4].map(token));
    expect(page?.scannedTo).to.equal(token(4));
    expect(ring.read(token(0), null, 3)).to.equal(null);
  });

  it('holds at most its bytes, and coverage starts after the last entry it let go', () => {
    const ring = new EventRing(100, compareTokens);
    ring.advance(token(0));
    for (let n = 1; n <= 10; n++) ring.push({ token: token(n), key: 'k', event: event(n), bytes: 25 });
    ring.advance(token(10));
    expect(ring.bytes).to.equal(100);
    expect(ring.size).to.equal(4);
    expect(ring.coveredFrom).to.equal(token(6));
    expect(ring.covers(token(6))).to.equal(true);
    expect(ring.covers(token(5))).to.equal(false);
    expect(ring.read(token(6), 'k', 100)?.entries.map((e) => e.token)).to.deep.equal(
      [7, 8, 9, 10].map(token),
    );
    // One byte more than the bound lets one more go.
    const tight = new EventRing(99, compareTokens);
    for (let n = 1; n <= 4; n++) tight.push({ token: token(n), key: 'k', event: event(n), bytes: 25 });
    expect(tight.size).to.equal(3);
  });

  it('reports a drop of the key in its range, so a resume past it ends invalidated', () => {
    const ring = new EventRing(1_000, compareTokens);
    ring.advance(token(1));
    ring.push({ token: token(2), key: 'db.c', event: event(2), bytes: 1 });
    ring.push({ token: token(3), ends: (key) => key === 'db.c', bytes: 1 });
    ring.advance(token(3));
    const entries = ring.read(token(1), 'db.c', 10)?.entries ?? [];
    expect(entries.map((e) => 'event' in e)).to.deep.equal([true, false]);
    // watchAll is never ended by a drop.
    expect(ring.read(token(1), null, 10)?.entries.length).to.equal(1);
    ring.clear();
    expect(ring.covers(token(2))).to.equal(false);
  });

  it('any sequence of pushes keeps the bound, the order, and exactly the events after coverage', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 300 }),
        (sizes, max) => {
          const ring = new EventRing(max, compareTokens);
          ring.advance(token(0));
          for (const [i, bytes] of sizes.entries()) {
            ring.push({ token: token(i + 1), key: 'k', event: event(i + 1), bytes });
          }
          ring.advance(token(sizes.length));
          if (max === 0) return ring.size === 0;
          if (ring.bytes > max) return false;
          const from = ring.coveredFrom!;
          const page = ring.read(from, 'k', 1_000);
          const expected = sizes.map((_, i) => token(i + 1)).filter((t) => compareTokens(t, from) > 0);
          return JSON.stringify(page?.entries.map((e) => e.token)) === JSON.stringify(expected);
        },
      ),
    );
  });

  it('measures an event by its document', () => {
    expect(eventBytes(event(1, 1000)) - eventBytes(event(1, 0))).to.equal(1000);
  });
});

describe('MongoDB change feed: catch-up streams', () => {
  it('opens below the limit, queues up to the waiting bound, refuses past it', () => {
    expect(catchUpDecision(0, 0, 2, 4)).to.equal('open');
    expect(catchUpDecision(1, 0, 2, 4)).to.equal('open');
    expect(catchUpDecision(2, 0, 2, 4)).to.equal('wait');
    expect(catchUpDecision(2, 3, 2, 4)).to.equal('wait');
    expect(catchUpDecision(2, 4, 2, 4)).to.equal('refuse');
    // Never overtakes those already waiting.
    expect(catchUpDecision(1, 1, 2, 4)).to.equal('wait');
  });

  it('hands a released slot to the first waiter, and refuses a waiter past its wait', async () => {
    const limiter = new CatchUpLimiter(1, 50, 1);
    const first = await limiter.acquire();
    expect(first).to.be.a('function');
    const second = limiter.acquire();
    expect(await limiter.acquire()).to.equal(null);
    first!();
    first!();
    const granted = await second;
    expect(granted).to.be.a('function');
    expect(limiter.active).to.equal(1);
    const late = await limiter.acquire();
    expect(late).to.equal(null);
    expect(limiter.waiting).to.equal(0);
    granted!();
    expect(limiter.active).to.equal(0);
  });
});

describe('MongoDB change feed: after a failure, and checkpoints', () => {
  it('pauses 1 s after a failure, doubling to at most 60 s', () => {
    expect(restartDelayMs(0)).to.equal(0);
    expect(restartDelayMs(1)).to.equal(1_000);
    expect(restartDelayMs(2)).to.equal(2_000);
    expect(restartDelayMs(6)).to.equal(32_000);
    expect(restartDelayMs(7)).to.equal(60_000);
    expect(restartDelayMs(1_000)).to.equal(60_000);
  });

  it('after a failure, tries again by itself while failed and open; later while a shared stream runs', () => {
    expect(recoveryStep({ closed: false, failed: true, sourceRunning: false })).to.equal('open');
    expect(recoveryStep({ closed: false, failed: true, sourceRunning: true })).to.equal('later');
    expect(recoveryStep({ closed: false, failed: false, sourceRunning: false })).to.equal('none');
    expect(recoveryStep({ closed: true, failed: true, sourceRunning: false })).to.equal('none');
  });

  it('offers the shared stream’s position as a checkpoint only to a live subscription with nothing pending', () => {
    const live = { closed: false, catchingUp: false, pending: 0, published: 'PBRT' };
    expect(checkpointToken(live)).to.equal('PBRT');
    expect(checkpointToken({ ...live, pending: 1 })).to.equal(null);
    expect(checkpointToken({ ...live, catchingUp: true })).to.equal(null);
    expect(checkpointToken({ ...live, closed: true })).to.equal(null);
    expect(checkpointToken({ ...live, published: null })).to.equal(null);
  });

  it('warns once per interval and says how many it left out', () => {
    let now = 0;
    const throttle = new WarningThrottle(60_000, () => now);
    expect(throttle.note()).to.deep.equal({ report: true, suppressed: 0 });
    for (let i = 0; i < 1000; i++) expect(throttle.note().report).to.equal(false);
    now = 59_999;
    expect(throttle.note().report).to.equal(false);
    now = 60_000;
    expect(throttle.note()).to.deep.equal({ report: true, suppressed: 1001 });
    expect(throttle.total).to.equal(1003);
  });
});

describe('MongoDB store: deployment checks of the review', () => {
  it('a mongos hello (no lastWrite) still gives the clock a time: its $clusterTime', () => {
    const ts = new Timestamp({ t: 500, i: 3 });
    expect(helloTime({ msg: 'isdbgrid', $clusterTime: { clusterTime: ts } })?.toString()).to.equal(
      ts.toString(),
    );
    // A replica-set member's own gossip is not its majority-commit time.
    expect(helloTime({ setName: 'rs0', $clusterTime: { clusterTime: ts } })).to.equal(null);
    expect(helloTime({ msg: 'isdbgrid' })).to.equal(null);
  });

  it('refuses a direct connection to a secondary, naming the host, the set and the fix', () => {
    const verdict = checkServer(
      { isWritablePrimary: false, secondary: true, setName: 'rs0', me: 'db2:27017', ok: 1 },
      { version: '7.0.2', versionArray: [7, 0, 2, 0] },
    );
    expect(verdict.ok).to.equal(false);
    if (verdict.ok) return;
    expect(verdict.problems).to.deep.equal(['notPrimary']);
    expect(verdict.message).to.include('db2:27017').and.include('secondary').and.include('?replicaSet=rs0');
    expect(verdict.message).to.include('directConnection=true');
    // The primary itself, or a legacy isMaster reply from it, is fine.
    expect(checkServer({ ismaster: true, setName: 'rs0', ok: 1 }, { version: '7.0.2' }).ok).to.equal(true);
  });

  it('refuses a read preference other than primary, and accepts none or primary', () => {
    expect(readPreferenceProblem(undefined)).to.equal(null);
    expect(readPreferenceProblem('primary')).to.equal(null);
    for (const mode of ['secondary', 'secondaryPreferred', 'primaryPreferred', 'nearest']) {
      expect(readPreferenceProblem(mode), mode).to.include(`readPreference=${mode}`);
    }
  });

  it('recognises only the driver’s pool wait timeout as one (the wire test provokes a real one)', () => {
    expect(isPoolWaitTimeout(new MongoNetworkError('x'))).to.equal(false);
    expect(isPoolWaitTimeout(server(50))).to.equal(false);
    expect(unavailability(new MongoNetworkError('x'), 1000)?.reason).to.equal('store_unavailable');
  });
});
