/**
 * The storage port's webhook parts (webhooks, deliveries, feed consumers) on every available
 * store, through the port alone.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { isoNow, newId } from '../../src/ids.js';
import {
  type DataScope,
  type DeliveryRecord,
  DuplicateError,
  type Store,
  type WebhookRecord,
} from '../../src/store/port.js';
import { mongoStoreFactories } from '../support/mongodb.js';
import { embeddedFactory } from './embeddedFactory.js';
import type { StoreFactory } from './factories.js';

const factories: StoreFactory[] = [embeddedFactory, ...(await mongoStoreFactories())];

function newScope(env: DataScope['env'] = 'test'): DataScope {
  return { projectId: newId('prj'), env };
}

function webhook(scope: DataScope, fields: Partial<WebhookRecord> = {}): WebhookRecord {
  const now = isoNow();
  return {
    id: newId('wh'),
    scope,
    collection: 'orders',
    url: 'https://example.test/hook',
    events: ['document.created'],
    description: '',
    status: 'active',
    sealedSecret: 'v1.sealed',
    consecutiveFailures: 0,
    createdAt: now,
    updatedAt: now,
    ...fields,
  };
}

function delivery(
  webhookId: string,
  n: number,
  status: DeliveryRecord['status'] = 'succeeded',
): DeliveryRecord {
  const at = new Date(Date.UTC(2025, 0, 1, 0, 0, n)).toISOString();
  return {
    id: newId('dlv'),
    webhookId,
    event: 'document.created',
    documentId: `doc_${n}`,
    eventTimestamp: at,
    status,
    attempts: [],
    createdAt: at,
    updatedAt: at,
  };
}

for (const factory of factories) {
  describe(`webhook storage: ${factory.name}`, () => {
    let store: Store;
    before(async () => {
      store = await factory.create();
    });
    after(async () => {
      await factory.destroy(store);
    });

    it('creates, reads, lists and counts webhooks only within their scope and collection', async () => {
      const scope = newScope();
      const a = webhook(scope);
      const b = webhook(scope, { events: ['document.deleted'] });
      await store.webhooks.create(a, 100);
      await store.webhooks.create(b, 100);
      await store.webhooks.create(webhook(scope, { collection: 'other' }), 100);
      await store.webhooks.create(webhook({ ...scope, env: 'live' }), 100);
      expect(await store.webhooks.get(scope, 'orders', a.id)).to.deep.equal(a);
      expect(await store.webhooks.get(scope, 'other', a.id)).to.equal(null);
      expect(await store.webhooks.get({ ...scope, env: 'live' }, 'orders', a.id)).to.equal(null);
      expect((await store.webhooks.list(scope, 'orders')).map((w) => w.id)).to.deep.equal([a.id, b.id]);
      expect(await store.webhooks.count(scope, 'orders')).to.equal(2);
      const err = await store.webhooks.create(a, 100).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(DuplicateError);
    });

    it('creates up to the maximum per collection and not one more, even when creates race', async () => {
      const scope = newScope();
      const results = await Promise.all(
        Array.from({ length: 12 }, () => store.webhooks.create(webhook(scope), 3)),
      );
      expect(results.filter(Boolean)).to.have.length(3);
      expect(await store.webhooks.count(scope, 'orders')).to.equal(3);
      // The maximum counts per collection and scope.
      expect(await store.webhooks.create(webhook(scope, { collection: 'other' }), 3)).to.equal(true);
      expect(await store.webhooks.create(webhook({ ...scope, env: 'live' }), 3)).to.equal(true);
      expect(await store.webhooks.create(webhook(scope), 4)).to.equal(true);
      expect(await store.webhooks.create(webhook(scope), 4)).to.equal(false);
    });

    it('lists as active only enabled webhooks subscribed to the event', async () => {
      const scope = newScope();
      const created = webhook(scope, { events: ['document.created', 'document.updated'] });
      const disabled = webhook(scope, { status: 'disabled' });
      await store.webhooks.create(created, 100);
      await store.webhooks.create(disabled, 100);
      await store.webhooks.create(webhook(scope, { events: ['document.deleted'] }), 100);
      const active = await store.webhooks.listActive(scope, 'orders', 'document.updated');
      expect(active.map((w) => w.id)).to.deep.equal([created.id]);
    });

    it('lists a collection’s first webhook as active at once, after a look-up found none', async () => {
      const scope = newScope();
      expect(await store.webhooks.listActive(scope, 'orders', 'document.created')).to.deep.equal([]);
      const first = webhook(scope, { events: ['document.created'] });
      await store.webhooks.create(first, 100);
      const active = await store.webhooks.listActive(scope, 'orders', 'document.created');
      expect(active.map((w) => w.id)).to.deep.equal([first.id]);
    });

    it('updates only the given fields and deletes a webhook with its deliveries', async () => {
      const scope = newScope();
      const w = webhook(scope);
      await store.webhooks.create(w, 100);
      const later = isoNow(Date.now() + 1000);
      const updated = await store.webhooks.update(scope, 'orders', w.id, {
        url: 'https://x.test/',
        updatedAt: later,
      });
      expect(updated).to.deep.equal({ ...w, url: 'https://x.test/', updatedAt: later });
      expect(await store.webhooks.update(scope, 'other', w.id, { updatedAt: later })).to.equal(null);
      const d = delivery(w.id, 1);
      await store.deliveries.save(d, 50);
      expect(await store.webhooks.delete(scope, 'other', w.id)).to.equal(false);
      expect(await store.webhooks.delete(scope, 'orders', w.id)).to.equal(true);
      expect(await store.webhooks.get(scope, 'orders', w.id)).to.equal(null);
      expect(await store.deliveries.get(d.id)).to.equal(null);
      expect(await store.webhooks.delete(scope, 'orders', w.id)).to.equal(false);
    });

    it('counts failed deliveries and disables exactly when the count reaches the threshold', async () => {
      const scope = newScope();
      const w = webhook(scope);
      await store.webhooks.create(w, 100);
      for (let i = 1; i <= 2; i++) {
        const after = await store.webhooks.recordFailure(w.id, 3, isoNow());
        expect(after?.consecutiveFailures).to.equal(i);
        expect(after?.status).to.equal('active');
      }
      const at = isoNow(Date.now() + 5000);
      const third = await store.webhooks.recordFailure(w.id, 3, at);
      expect(third?.status).to.equal('disabled');
      expect(third?.updatedAt).to.equal(at);
      await store.webhooks.recordSuccess(w.id);
      expect((await store.webhooks.get(scope, 'orders', w.id))?.consecutiveFailures).to.equal(0);
      expect(await store.webhooks.recordFailure(newId('wh'), 3, at)).to.equal(null);
    });

    it('counts concurrent failures without losing one', async () => {
      const scope = newScope();
      const w = webhook(scope);
      await store.webhooks.create(w, 100);
      await Promise.all(Array.from({ length: 20 }, () => store.webhooks.recordFailure(w.id, 100, isoNow())));
      expect((await store.webhooks.get(scope, 'orders', w.id))?.consecutiveFailures).to.equal(20);
    });

    it('keeps one sealing key: the first one generated', async () => {
      const first = await store.webhooks.sealingKey(() => randomBytes(32));
      const second = await store.webhooks.sealingKey(() => randomBytes(32));
      expect(first.length).to.equal(32);
      expect(second.equals(first)).to.equal(true);
    });

    it('lists deliveries newest first and prunes finished ones beyond keep, never pending ones', async () => {
      const webhookId = newId('wh');
      const pending = delivery(webhookId, 0, 'pending');
      await store.deliveries.save(pending, 3);
      const saved: DeliveryRecord[] = [];
      for (let n = 1; n <= 4; n++) {
        const d = delivery(webhookId, n);
        saved.push(d);
        await store.deliveries.save(d, 3);
      }
      const listed = await store.deliveries.list(webhookId, 10);
      // Newest three, plus the old pending one; delivery 1 (finished, 4th newest) is gone.
      expect(listed.map((d) => d.id)).to.deep.equal([saved[3]!.id, saved[2]!.id, saved[1]!.id, pending.id]);
      expect(await store.deliveries.list(webhookId, 2)).to.have.length(2);
      // Replacing an existing delivery changes it without pruning anything.
      const done = { ...pending, status: 'failed' as const, updatedAt: isoNow() };
      await store.deliveries.save(done, 3);
      expect(await store.deliveries.get(pending.id)).to.deep.equal(done);
      expect(await store.deliveries.list(webhookId, 10)).to.have.length(4);
    });

    it('prunes to keep also when many saves of one webhook arrive together', async () => {
      const webhookId = newId('wh');
      const saved = [1, 2, 3, 4, 5, 6].map((n) => delivery(webhookId, n));
      await Promise.all(saved.map((d) => store.deliveries.save(d, 3)));
      const listed = await store.deliveries.list(webhookId, 10);
      expect(listed.map((d) => d.id)).to.deep.equal([saved[5]!.id, saved[4]!.id, saved[3]!.id]);
    });

    it('gives a feed consumer lease to one holder at a time, and saves positions only for it', async () => {
      const name = `consumer-${newId('req')}`;
      expect(await store.consumers.position(name)).to.equal(null);
      expect(await store.consumers.acquire(name, 'a', 60_000)).to.equal(true);
      expect(await store.consumers.acquire(name, 'b', 60_000)).to.equal(false);
      expect(await store.consumers.acquire(name, 'a', 60_000)).to.equal(true);
      expect(await store.consumers.savePosition(name, 'a', 'p1')).to.equal(true);
      expect(await store.consumers.savePosition(name, 'b', 'p2')).to.equal(false);
      expect(await store.consumers.position(name)).to.equal('p1');
      await store.consumers.release(name, 'a');
      expect(await store.consumers.savePosition(name, 'a', 'p3')).to.equal(false);
      expect(await store.consumers.acquire(name, 'b', 60_000)).to.equal(true);
      expect(await store.consumers.position(name)).to.equal('p1');
    });

    it('gives a delivery attempt lock to one holder at a time, renews it for it, and frees it', async () => {
      const id = newId('dlv');
      expect(await store.attemptLocks.acquire(id, 'a', 60_000)).to.equal(true);
      expect(await store.attemptLocks.acquire(id, 'b', 60_000)).to.equal(false);
      expect(await store.attemptLocks.acquire(id, 'a', 60_000)).to.equal(true);
      await store.attemptLocks.release(id, 'b');
      expect(await store.attemptLocks.acquire(id, 'b', 60_000)).to.equal(false);
      await store.attemptLocks.release(id, 'a');
      expect(await store.attemptLocks.acquire(id, 'b', 60_000)).to.equal(true);
      expect(await store.attemptLocks.acquire(newId('dlv'), 'a', 60_000)).to.equal(true);
    });

    it('keeps a delivery body once: the first bytes stay, its time only moves later, then it goes', async () => {
      const key = `body_${newId('req')}`;
      const t = Date.now() + 60_000;
      expect(await store.deliveryBodies.get(key)).to.equal(null);
      await store.deliveryBodies.keep(key, '{"a":1}', t);
      await store.deliveryBodies.keep(key, '{"other":2}', t - 30_000);
      expect(await store.deliveryBodies.get(key)).to.equal('{"a":1}');
      await store.deliveryBodies.keep(key, '{"other":3}', t + 30_000);
      await store.deliveryBodies.removeExpired(t + 1);
      expect(await store.deliveryBodies.get(key)).to.equal('{"a":1}');
      await store.deliveryBodies.removeExpired(t + 30_001);
      expect(await store.deliveryBodies.get(key)).to.equal(null);
    });

    it('lets another holder take an expired attempt lock, and only one of many racing for it', async () => {
      const id = newId('dlv');
      expect(await store.attemptLocks.acquire(id, 'a', 50)).to.equal(true);
      await new Promise((r) => setTimeout(r, 120));
      const racing = await Promise.all(
        ['b', 'c', 'd', 'e'].map((h) => store.attemptLocks.acquire(id, h, 60_000)),
      );
      expect(racing.filter(Boolean)).to.have.length(1);
      expect(await store.attemptLocks.acquire(id, 'a', 60_000)).to.equal(false);
    });

    it('lets another holder take an expired lease', async () => {
      const name = `consumer-${newId('req')}`;
      expect(await store.consumers.acquire(name, 'a', 50)).to.equal(true);
      expect(await store.consumers.acquire(name, 'b', 60_000)).to.equal(false);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(await store.consumers.savePosition(name, 'a', 'late')).to.equal(false);
      expect(await store.consumers.acquire(name, 'b', 60_000)).to.equal(true);
    });
  });
}
