/**
 * The MongoDB store's webhook decisions, evaluated without a server: update pipelines and
 * filters run through mingo (an independent implementation of MongoDB's query and aggregation
 * language), and the dedupe rule of the Agenda repository.
 */
import type { JobParameters } from 'agenda';
import { expect } from 'chai';
import { aggregate, Query } from 'mingo';
import { MongoServerError } from 'mongodb';
import { guardId } from '../../src/store/mongodb/database/guards.js';
import { DEDUPE_INDEX, isLostDedupeRace } from '../../src/store/mongodb/jobs/repository.js';
import {
  attemptLockTakeFilter,
  attemptLockTakeUpdate,
  deliveryBodyExtendUpdate,
  deliveryBodyKeepUpdate,
  failurePipeline,
  leaseHeldFilter,
  leaseTakeFilter,
  leaseTakeUpdate,
} from '../../src/store/mongodb/webhooks/webhookUpdates.js';
import type { DataScope } from '../../src/store/port.js';

type Doc = Record<string, unknown>;

function apply(doc: Doc, pipeline: Doc[]): Doc {
  return aggregate([doc], pipeline)[0] as Doc;
}

describe('MongoDB store: webhook failure pipeline', () => {
  const webhook = { _id: 'wh_1', status: 'active', consecutiveFailures: 0, updatedAt: 'before' };

  it('adds one failure and disables exactly when the count reaches the threshold', () => {
    const three = apply({ ...webhook, consecutiveFailures: 3 }, failurePipeline(5, 'now'));
    expect(three).to.include({ consecutiveFailures: 4, status: 'active', updatedAt: 'before' });
    const four = apply({ ...webhook, consecutiveFailures: 4 }, failurePipeline(5, 'now'));
    expect(four).to.include({ consecutiveFailures: 5, status: 'disabled', updatedAt: 'now' });
  });

  it('keeps the time of disabling when a disabled webhook fails again', () => {
    const again = apply(
      { ...webhook, status: 'disabled', consecutiveFailures: 5 },
      failurePipeline(5, 'later'),
    );
    expect(again).to.include({ consecutiveFailures: 6, status: 'disabled', updatedAt: 'before' });
  });

  it('writes a time that looks like a field path as a literal', () => {
    const odd = apply({ ...webhook, consecutiveFailures: 4 }, failurePipeline(5, '$status'));
    expect(odd.updatedAt).to.equal('$status');
  });
});

describe('MongoDB store: feed consumer lease', () => {
  const lease = (holder: string | null, expiresInMs: number) => ({
    _id: 'dispatcher',
    holder,
    leaseExpiresAt: new Date(Date.now() + expiresInMs),
  });

  it('may be taken when free, own or expired, and not while another holder has it', () => {
    const take = new Query(leaseTakeFilter('dispatcher', 'me'));
    expect(take.test(lease(null, 0))).to.equal(true);
    expect(take.test(lease('me', 60_000))).to.equal(true);
    expect(take.test(lease('other', -1000))).to.equal(true);
    expect(take.test(lease('other', 60_000))).to.equal(false);
    expect(new Query(leaseTakeFilter('elsewhere', 'me')).test(lease(null, 0))).to.equal(false);
  });

  it('is held (for saving positions) only by its holder and only until it expires', () => {
    const held = new Query(leaseHeldFilter('dispatcher', 'me'));
    expect(held.test(lease('me', 60_000))).to.equal(true);
    expect(held.test(lease('me', -1000))).to.equal(false);
    expect(held.test(lease('other', 60_000))).to.equal(false);
  });

  it('runs for ttl from the server clock and names its holder literally', () => {
    const taken = apply(lease(null, 0), leaseTakeUpdate('$holder', 30_000));
    expect(taken.holder).to.equal('$holder');
    const expires = (taken.leaseExpiresAt as Date).getTime();
    expect(expires).to.be.within(Date.now() + 29_000, Date.now() + 30_000);
  });
});

describe('MongoDB store: Agenda job dedupe', () => {
  const duplicate = new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 });
  const job = (fields: Partial<JobParameters>): JobParameters => ({
    name: 'webhook-delivery',
    priority: 0,
    nextRunAt: new Date(),
    type: 'normal',
    data: { dedupeKey: 'k' },
    ...fields,
  });

  it('retries an insert-only unique save that lost a duplicate-key race, and nothing else', () => {
    const unique = { unique: { 'data.dedupeKey': 'k' }, uniqueOpts: { insertOnly: true } };
    expect(isLostDedupeRace(duplicate, job(unique))).to.equal(true);
    expect(isLostDedupeRace(new Error('other'), job(unique))).to.equal(false);
    expect(isLostDedupeRace(duplicate, job({ unique: { 'data.dedupeKey': 'k' } }))).to.equal(false);
    expect(isLostDedupeRace(duplicate, job({}))).to.equal(false);
  });

  it('indexes (name, data.dedupeKey) uniquely, only for jobs that carry a key', () => {
    expect(DEDUPE_INDEX).to.deep.equal({
      key: { name: 1, 'data.dedupeKey': 1 },
      name: 'name_dedupeKey_unique',
      unique: true,
      partialFilterExpression: { 'data.dedupeKey': { $exists: true } },
    });
  });
});

describe('MongoDB store: guard documents of bounded creates', () => {
  it('are one per counted set, and two sets never share one', () => {
    const scope: DataScope = { projectId: 'prj_1', env: 'test' };
    const webhooks = (s: typeof scope, collection: string) =>
      guardId({ kind: 'webhooks', scope: s, collection });
    expect(webhooks(scope, 'orders')).to.equal(webhooks({ ...scope }, 'orders'));
    const all = [
      webhooks(scope, 'orders'),
      webhooks(scope, 'orders2'),
      webhooks({ ...scope, env: 'live' }, 'orders'),
      webhooks({ ...scope, projectId: 'prj_2' }, 'orders'),
      // Joined with a separator no part holds, so shifting text between parts changes the id.
      webhooks({ projectId: 'prj_1_test', env: 'test' }, 'orders'),
      guardId({ kind: 'activeKeys', projectId: 'prj_1' }),
      guardId({ kind: 'activeKeys', projectId: 'prj_2' }),
    ];
    expect(new Set(all).size).to.equal(all.length);
  });
});

describe('MongoDB store: delivery attempt lock', () => {
  const lock = (holder: string, expiresInMs: number) => ({
    _id: 'dlv_1',
    holder,
    expiresAt: new Date(Date.now() + expiresInMs),
  });

  it('may be renewed by its holder and taken by another only once expired by the server clock', () => {
    const take = new Query(attemptLockTakeFilter('dlv_1', 'me'));
    expect(take.test(lock('me', 60_000))).to.equal(true);
    expect(take.test(lock('other', -1000))).to.equal(true);
    expect(take.test(lock('other', 60_000))).to.equal(false);
    expect(new Query(attemptLockTakeFilter('dlv_2', 'me')).test(lock('me', 60_000))).to.equal(false);
  });

  it('runs for ttl from the server clock and names its holder literally', () => {
    const taken = apply(lock('old', -1), attemptLockTakeUpdate('$holder', 30_000));
    expect(taken.holder).to.equal('$holder');
    const expires = (taken.expiresAt as Date).getTime();
    expect(expires).to.be.within(Date.now() + 29_000, Date.now() + 30_000);
  });
});

describe('MongoDB store: kept delivery bodies', () => {
  const T = Date.parse('2026-01-01T00:00:00Z');

  it('stores the body on insert as a literal, with its time as a Date the TTL index reads', () => {
    const inserted = apply({ _id: 'body_1' }, deliveryBodyKeepUpdate('{"$set":"$x"}', T));
    expect(inserted).to.deep.equal({ _id: 'body_1', body: '{"$set":"$x"}', expiresAt: new Date(T) });
  });

  it('keeps the first body byte for byte and only moves the time later', () => {
    const kept = { _id: 'body_1', body: 'first', expiresAt: new Date(T) };
    expect(apply(kept, deliveryBodyKeepUpdate('second', T - 1))).to.deep.equal(kept);
    expect(apply(kept, deliveryBodyKeepUpdate('second', T + 1))).to.deep.equal({
      ...kept,
      expiresAt: new Date(T + 1),
    });
  });

  it('extends a kept body without its bytes, and never moves its time earlier', () => {
    const kept = { _id: 'body_1', body: 'first', expiresAt: new Date(T) };
    expect(apply(kept, deliveryBodyExtendUpdate(T + 5))).to.deep.equal({
      ...kept,
      expiresAt: new Date(T + 5),
    });
    expect(apply(kept, deliveryBodyExtendUpdate(T - 5))).to.deep.equal(kept);
  });
});
