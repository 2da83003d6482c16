/**
 * Where a catch-up stream of the MongoDB change feed starts (resumePoint.ts), with resume tokens
 * as real servers wrote them: the cluster time read from a token, narrowed streams started at
 * that time, and the events of that time already delivered skipped.
 */
import { expect } from 'chai';
import { Timestamp } from 'mongodb';
import { compareTokens } from '../../src/store/mongodb/changes/changeEvents.js';
import {
  catchUpStart,
  deliveredBefore,
  tokenClusterTime,
} from '../../src/store/mongodb/changes/resumePoint.js';

/** Tokens as MongoDB sent them, with the clusterTime of their event beside them. */
const REAL = [
  // 4.2–6.0 (token version 1), an insert at { t: 1675593288, i: 2 }.
  {
    token:
      '8263DF8648000000022B022C0100296E5A10049BF97FEDD65D4F9789DA7B2ECCDE1C8846645F6964006463DF8648C817953F69BEF1910004',
    time: new Timestamp({ t: 1675593288, i: 2 }),
  },
  // A delete at { t: 1639236696, i: 11 }.
  {
    token:
      '8261B4C4580000000B2B022C0100296E5A1004AB87601FFD4649B0800C6173B36640D946645F6964006461B4C448B64021DA8C6200000004',
    time: new Timestamp({ t: 1639236696, i: 11 }),
  },
  // 7.0+ (token version 2, the event identifier names the operation type).
  {
    token:
      '82687E82DE000000012B042C0100296E5A1004FEA7A1FFE23C4FD88070BFA43C9C995C463C6F7065726174696F6E54797065003C696E736572740046646F63756D656E744B65790046645F69640064687E82DC122A414A3ECD77F8000004',
    time: new Timestamp({ t: 1753121502, i: 1 }),
  },
];
/** A post-batch (high-water-mark) token: tokenType 0 where an event's is 128. */
const HIGH_WATER_MARK = '8263515979000000022B0229296E04';

describe('MongoDB change feed: where a catch-up stream starts', () => {
  it('reads the cluster time a real resume token starts with', () => {
    for (const { token, time } of REAL) expect(tokenClusterTime(token)?.equals(time), token).to.equal(true);
    expect(tokenClusterTime(HIGH_WATER_MARK)?.equals(new Timestamp({ t: 1666275705, i: 2 }))).to.equal(true);
  });

  it('reads no time from what is not a resume token', () => {
    for (const token of [
      '',
      '82',
      '8263DF864800',
      '00FF00FF00FF00FF00FF',
      '8263DF8648000000022',
      'zz63DF86480000000200',
    ]) {
      expect(tokenClusterTime(token), token).to.equal(null);
    }
  });

  it('starts a stream narrowed to a collection at the token’s cluster time, skipping through the token', () => {
    const token = REAL[0]!.token;
    const from = catchUpStart(token, { kind: 'collection', db: 'folio_x', collection: 'notes' });
    expect(from?.start.startAfter).to.equal(undefined);
    expect(from?.start.startAtOperationTime?.equals(REAL[0]!.time)).to.equal(true);
    expect(from?.skipThrough).to.equal(token);
  });

  it('resumes a stream of the shared stream’s own pipeline after the token itself', () => {
    const token = REAL[1]!.token;
    expect(catchUpStart(token, { kind: 'all', prefix: 'folio' })).to.deep.equal({
      start: { startAfter: { _data: token } },
      skipThrough: null,
    });
  });

  it('has no start for a token without a cluster time', () => {
    expect(catchUpStart('ABCDEF', { kind: 'collection', db: 'folio_x', collection: 'notes' })).to.equal(null);
  });

  it('skips exactly the changes at or before the token, in the server’s token order', () => {
    // Same cluster time: a post-batch token sorts before every event of it; events by txnOpIndex.
    const at = (op: string) => `8263DF8648000000022B022C0100${op}6E5A1004${'AB'.repeat(16)}04`;
    const [before, self, after] = [at('29'), at('2B02'), at('2B04')];
    const hwm = '8263DF8648000000022B0229296E04';
    expect([after, hwm, self, before].sort(compareTokens)).to.deep.equal([hwm, before, self, after]);
    expect(deliveredBefore(before, self)).to.equal(true);
    expect(deliveredBefore(self, self)).to.equal(true);
    expect(deliveredBefore(after, self)).to.equal(false);
    // Resuming from a post-batch token skips none of the events of its time.
    expect(deliveredBefore(before, hwm)).to.equal(false);
    expect(deliveredBefore(before, null)).to.equal(false);
    expect(deliveredBefore(null, self)).to.equal(false);
  });
});
