/**
 * Webhook deliveries of document changes into a real local receiver, on every available store:
 * content and signature, retries per plan, disabling and re-enabling, history, isolation, and
 * the API never waiting for a receiver. Backoff is tiny here (`backoffBaseMs`).
 */
import { expect } from 'chai';
import { type ReceivedRequest, startReceiver, useReceiver, verifySignature } from '../support/receiver.js';
import type { Tenant, TestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';
import { eventually } from '../support/timeout.js';

const BASE_MS = 40;
const FAST = {
  webhooks: { allowPrivateTargets: true, backoffBaseMs: BASE_MS, pollMs: 40, timeoutMs: 3000 },
};

async function registerHook(
  server: TestServer,
  tenant: Tenant,
  url: string,
  options: { collection?: string; events?: string[]; key?: string } = {},
): Promise<{ id: string; secret: string }> {
  const res = await server.request('POST', `/${tenant.project}/${options.collection ?? 'orders'}/_webhooks`, {
    key: options.key ?? tenant.key,
    body: { url, events: options.events ?? ['document.created', 'document.updated', 'document.deleted'] },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`);
  return res.body;
}

async function hookState(server: TestServer, tenant: Tenant, id: string, collection = 'orders') {
  const res = await server.request('GET', `/${tenant.project}/${collection}/_webhooks/${id}`, {
    key: tenant.key,
  });
  return res.body;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

forEachStore(
  'webhook deliveries',
  (ctx) => {
    const receiver = useReceiver('each');
    const path = (r: ReceivedRequest) => r.path;

    it('delivers created, updated and deleted events once each, signed, with the documented body', async () => {
      const hook = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/all`);
      const created = await ctx.server.request('POST', `/${ctx.tenant.project}/orders`, {
        key: ctx.tenant.key,
        body: { item: 'tea', qty: 1 },
      });
      const id = created.body._id;
      await ctx.server.request('PATCH', `/${ctx.tenant.project}/orders/${id}`, {
        key: ctx.tenant.key,
        body: { qty: 2 },
        contentType: 'application/merge-patch+json',
      });
      await ctx.server.request('DELETE', `/${ctx.tenant.project}/orders/${id}`, { key: ctx.tenant.key });
      const got = await receiver().waitFor(3, (r) => path(r) === '/all');
      await sleep(200);
      expect(receiver().requests.filter((r) => path(r) === '/all')).to.have.length(3);
      const byEvent = new Map(got.map((r) => [r.body.event as string, r]));
      for (const [event, version, qty] of [
        ['document.created', 1, 1],
        ['document.updated', 2, 2],
        ['document.deleted', 2, 2],
      ] as const) {
        const r = byEvent.get(event);
        expect(r, event).to.not.equal(undefined);
        expect(r!.headers['x-service-event']).to.equal(event);
        expect(r!.headers['x-service-delivery-id']).to.match(/^dlv_[0-9A-Z]{26}$/);
        expect(r!.headers['x-service-timestamp']).to.equal(r!.body.timestamp);
        expect(verifySignature(r!.rawBody, r!.headers['x-service-signature'], hook.secret)).to.equal(true);
        expect(r!.body).to.include({ project: ctx.tenant.project, collection: 'orders', documentId: id });
        // For a delete, the document as it was just before.
        expect(r!.body.document).to.include({ _id: id, item: 'tea', qty, $version: version });
      }
      const ids = new Set(got.map((r) => r.headers['x-service-delivery-id']));
      expect(ids.size).to.equal(3);
      const state = await hookState(ctx.server, ctx.tenant, hook.id);
      expect(state.deliveries.map((d: { status: string }) => d.status)).to.deep.equal([
        'succeeded',
        'succeeded',
        'succeeded',
      ]);
    });

    it('sends only the events a webhook subscribed to', async () => {
      await registerHook(ctx.server, ctx.tenant, `${receiver().url}/deletes`, {
        events: ['document.deleted'],
      });
      const created = await ctx.server.request('POST', `/${ctx.tenant.project}/orders`, {
        key: ctx.tenant.key,
        body: { n: 1 },
      });
      await ctx.server.request('DELETE', `/${ctx.tenant.project}/orders/${created.body._id}`, {
        key: ctx.tenant.key,
      });
      const [got] = await receiver().waitFor(1, (r) => path(r) === '/deletes');
      await sleep(200);
      expect(receiver().requests.filter((r) => path(r) === '/deletes')).to.have.length(1);
      expect(got!.body.event).to.equal('document.deleted');
    });

    it('never delivers changes of other collections, projects or environments', async () => {
      await registerHook(ctx.server, ctx.tenant, `${receiver().url}/mine`);
      const other = await ctx.server.tenant({ project: ctx.tenant.project });
      const { rawKey: liveKey } = await ctx.tenant.newKey({ env: 'live', name: 'live' });
      await ctx.server.request('POST', `/${ctx.tenant.project}/invoices`, {
        key: ctx.tenant.key,
        body: { n: 1 },
      });
      await ctx.server.request('POST', `/${other.project}/orders`, { key: other.key, body: { n: 2 } });
      await ctx.server.request('POST', `/${ctx.tenant.project}/orders`, { key: liveKey, body: { n: 3 } });
      await ctx.server.request('POST', `/${ctx.tenant.project}/orders`, {
        key: ctx.tenant.key,
        body: { n: 4 },
      });
      await receiver().waitFor(1, (r) => path(r) === '/mine');
      await sleep(300);
      const mine = receiver().requests.filter((r) => path(r) === '/mine');
      expect(mine.map((r) => r.body.document.n)).to.deep.equal([4]);
    });

    it('retries a failing delivery exactly the Free plan’s 2 times, with the same delivery id and growing delays', async () => {
      receiver().respond = () => 500;
      const hook = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/fail`, {
        collection: 'retries',
      });
      await ctx.server.request('POST', `/${ctx.tenant.project}/retries`, {
        key: ctx.tenant.key,
        body: { n: 1 },
      });
      const attempts = await receiver().waitFor(3, (r) => path(r) === '/fail');
      const delivery = await eventually(async () => {
        const [d] = (await hookState(ctx.server, ctx.tenant, hook.id, 'retries')).deliveries;
        expect(d.status).to.equal('failed');
        return d;
      });
      await sleep(BASE_MS * 8);
      expect(receiver().requests.filter((r) => path(r) === '/fail')).to.have.length(3);
      expect(new Set(attempts.map((r) => r.headers['x-service-delivery-id']))).to.deep.equal(
        new Set([delivery.id]),
      );
      expect(delivery.attempts.map((a: { number: number }) => a.number)).to.deep.equal([1, 2, 3]);
      expect(delivery.attempts.map((a: { statusCode: number }) => a.statusCode)).to.deep.equal([
        500, 500, 500,
      ]);
      expect(delivery.attempts[0].nextRetryAt).to.be.a('string');
      expect(delivery.attempts[2].nextRetryAt).to.equal(null);
      // Backoff base·2^(n-1) with ±20 % jitter: the gaps are at least 0.8·40 and 0.8·80 ms.
      expect(attempts[1]!.at - attempts[0]!.at).to.be.at.least(BASE_MS * 0.8 - 5);
      expect(attempts[2]!.at - attempts[1]!.at).to.be.at.least(BASE_MS * 2 * 0.8 - 5);
    });

    it('retries the Pro plan’s 5 times, and a delivery that succeeds on a retry stops there', async () => {
      await ctx.server.request('PATCH', '/api/account', {
        session: ctx.tenant.session,
        body: { plan: 'pro' },
      });
      try {
        receiver().respond = () => 503;
        const hook = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/pro`, {
          collection: 'proretries',
        });
        await ctx.server.request('POST', `/${ctx.tenant.project}/proretries`, {
          key: ctx.tenant.key,
          body: {},
        });
        await receiver().waitFor(6, (r) => path(r) === '/pro', 15_000);
        await eventually(async () => {
          const [d] = (await hookState(ctx.server, ctx.tenant, hook.id, 'proretries')).deliveries;
          expect(d.status).to.equal('failed');
          expect(d.attempts).to.have.length(6);
        });
        await sleep(BASE_MS * 8);
        expect(receiver().requests.filter((r) => path(r) === '/pro')).to.have.length(6);

        let calls = 0;
        receiver().respond = (r) => (r.path === '/recovers' && ++calls < 3 ? 500 : 200);
        const second = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/recovers`, {
          collection: 'proretries',
        });
        await ctx.server.request('POST', `/${ctx.tenant.project}/proretries`, {
          key: ctx.tenant.key,
          body: {},
        });
        await eventually(async () => {
          const [d] = (await hookState(ctx.server, ctx.tenant, second.id, 'proretries')).deliveries;
          expect(d.status).to.equal('succeeded');
          expect(d.attempts.map((a: { statusCode: number }) => a.statusCode)).to.deep.equal([500, 500, 200]);
        });
        await sleep(BASE_MS * 8);
        expect(receiver().requests.filter((r) => path(r) === '/recovers')).to.have.length(3);
      } finally {
        await ctx.server.request('PATCH', '/api/account', {
          session: ctx.tenant.session,
          body: { plan: 'free' },
        });
      }
    });

    it('disables a webhook after 5 failed deliveries in a row (not 4), and re-enabling resets the count', async () => {
      receiver().respond = () => 500;
      const hook = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/flaky`, {
        collection: 'flaky',
      });
      const write = () =>
        ctx.server.request('POST', `/${ctx.tenant.project}/flaky`, { key: ctx.tenant.key, body: {} });
      const failedDeliveries = (state: { deliveries: { status: string }[] }) =>
        state.deliveries.filter((d) => d.status === 'failed').length;
      for (let i = 1; i <= 4; i++) {
        await write();
        await eventually(async () =>
          expect(failedDeliveries(await hookState(ctx.server, ctx.tenant, hook.id, 'flaky'))).to.equal(i),
        );
      }
      const four = await hookState(ctx.server, ctx.tenant, hook.id, 'flaky');
      expect(four).to.include({ status: 'active', consecutiveFailures: 4 });
      await write();
      await eventually(async () =>
        expect(await hookState(ctx.server, ctx.tenant, hook.id, 'flaky')).to.include({
          status: 'disabled',
          consecutiveFailures: 5,
        }),
      );
      // Disabled: a new change is not sent at all.
      const sent = receiver().requests.length;
      await write();
      await sleep(400);
      expect(receiver().requests.length).to.equal(sent);

      receiver().respond = () => 200;
      const enabled = await ctx.server.request('PATCH', `/${ctx.tenant.project}/flaky/_webhooks/${hook.id}`, {
        key: ctx.tenant.key,
        body: { status: 'active' },
      });
      expect(enabled.body).to.include({ status: 'active', consecutiveFailures: 0 });
      await write();
      await receiver().waitFor(1, (r) => path(r) === '/flaky' && r.status === 200);
    });

    it('resets the failure count on a success', async () => {
      let fail = true;
      receiver().respond = () => (fail ? 500 : 200);
      const hook = await registerHook(ctx.server, ctx.tenant, `${receiver().url}/reset`, {
        collection: 'reset',
      });
      const write = () =>
        ctx.server.request('POST', `/${ctx.tenant.project}/reset`, { key: ctx.tenant.key, body: {} });
      await write();
      await eventually(async () =>
        expect((await hookState(ctx.server, ctx.tenant, hook.id, 'reset')).consecutiveFailures).to.equal(1),
      );
      fail = false;
      await write();
      await eventually(async () => {
        const state = await hookState(ctx.server, ctx.tenant, hook.id, 'reset');
        expect(state.deliveries[0].status).to.equal('succeeded');
        expect(state.consecutiveFailures).to.equal(0);
      });
    });

    it('answers writes without waiting for a slow receiver', async () => {
      receiver().delayMs = 1500;
      await registerHook(ctx.server, ctx.tenant, `${receiver().url}/slow`, { collection: 'slow' });
      for (let i = 0; i < 10; i++) {
        const res = await ctx.server.request('POST', `/${ctx.tenant.project}/slow`, {
          key: ctx.tenant.key,
          body: { i },
        });
        expect(res.status).to.equal(201);
      }
      // Every write was answered while the receiver had not yet answered a single delivery.
      expect(receiver().requests.filter((r) => path(r) === '/slow')).to.have.length(0);
      await receiver().waitFor(10, (r) => path(r) === '/slow');
    });
  },
  { config: FAST },
);

forEachStore(
  'webhook delivery history',
  (ctx) => {
    it('keeps the newest deliveries only (keepDeliveries), newest first', async () => {
      const receiver = await startReceiver();
      try {
        const hook = await registerHook(ctx.server, ctx.tenant, `${receiver.url}/h`);
        for (let i = 0; i < 4; i++) {
          await ctx.server.request('POST', `/${ctx.tenant.project}/orders`, {
            key: ctx.tenant.key,
            body: { i },
          });
          await receiver.waitFor(i + 1);
        }
        await eventually(async () => {
          const state = await hookState(ctx.server, ctx.tenant, hook.id);
          expect(state.deliveries).to.have.length(3);
          expect(state.deliveries.every((d: { status: string }) => d.status === 'succeeded')).to.equal(true);
        });
        const state = await hookState(ctx.server, ctx.tenant, hook.id);
        const docs = receiver.requests.map((r) => r.body.documentId);
        expect(state.deliveries.map((d: { documentId: string }) => d.documentId)).to.deep.equal(
          docs.slice(1).reverse(),
        );
      } finally {
        await receiver.close();
      }
    });
  },
  { config: { webhooks: { ...FAST.webhooks, keepDeliveries: 3 } } },
);
