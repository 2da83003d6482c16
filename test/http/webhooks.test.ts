/**
 * Webhook registration and the test delivery, over real HTTP into a real local receiver, on
 * every available store.
 */
import { expect } from 'chai';
import { useReceiver, verifySignature } from '../support/receiver.js';
import type { ApiResponse } from '../support/server.js';
import { forEachStore } from '../support/stores.js';

const LOCAL = { webhooks: { allowPrivateTargets: true, backoffBaseMs: 20, pollMs: 50, timeoutMs: 2000 } };

forEachStore(
  'webhooks: registration',
  (ctx) => {
    const receiver = useReceiver('suite');

    const base = () => `/${ctx.tenant.project}/orders/_webhooks`;
    const register = (body: unknown, collection = 'orders') =>
      ctx.server.request('POST', `/${ctx.tenant.project}/${collection}/_webhooks`, {
        key: ctx.tenant.key,
        body,
      });

    it('registers a webhook (201) and shows its whsec_ secret only in that answer', async () => {
      const res = await register({
        url: `${receiver().url}/a`,
        events: ['document.created'],
        description: 'orders',
      });
      expect(res.status).to.equal(201);
      expect(res.body.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(res.body).to.include({
        url: `${receiver().url}/a`,
        description: 'orders',
        status: 'active',
        collection: 'orders',
        project: ctx.tenant.project,
        env: 'test',
      });
      expect(res.body.id).to.match(/^wh_[0-9A-Z]{26}$/);
      expect(res.headers.get('location')).to.equal(`${base()}/${res.body.id}`);

      const one = await ctx.server.request('GET', `${base()}/${res.body.id}`, { key: ctx.tenant.key });
      expect(one.status).to.equal(200);
      expect(one.body).to.not.have.property('secret');
      expect(one.text).to.not.include(res.body.secret);
      expect(one.text).to.not.include('sealed');
      expect(one.body.deliveries).to.deep.equal([]);
      const list = await ctx.server.request('GET', base(), { key: ctx.tenant.key });
      expect(list.text).to.not.include(res.body.secret);
      expect(list.body.webhooks.map((w: { id: string }) => w.id)).to.include(res.body.id);
    });

    it('refuses bad URLs, unknown events and unknown fields with 400, registering nothing', async () => {
      const before = (await ctx.server.request('GET', base(), { key: ctx.tenant.key })).body.webhooks.length;
      for (const body of [
        { url: 'ftp://example.test/x', events: ['document.created'] },
        { url: 'not a url', events: ['document.created'] },
        { url: 'http://user:pw@127.0.0.1/x', events: ['document.created'] },
        { url: `${receiver().url}/x`, events: ['document.exploded'] },
        { url: `${receiver().url}/x`, events: [] },
        { url: `${receiver().url}/x`, events: ['document.created'], secret: 'mine' },
        { events: ['document.created'] },
      ]) {
        const res = await register(body);
        expect(res.status, JSON.stringify(body)).to.equal(400);
        expect(res.body.error.code).to.equal('invalid_body');
      }
      const after = (await ctx.server.request('GET', base(), { key: ctx.tenant.key })).body.webhooks.length;
      expect(after).to.equal(before);
    });

    it('updates url, events, description and status; deletes with 204 and then answers 404', async () => {
      const { body: created } = await register({ url: `${receiver().url}/b`, events: ['document.created'] });
      const patched = await ctx.server.request('PATCH', `${base()}/${created.id}`, {
        key: ctx.tenant.key,
        body: {
          url: `${receiver().url}/c`,
          events: ['document.updated', 'document.deleted'],
          description: 'd',
        },
      });
      expect(patched.status).to.equal(200);
      expect(patched.body).to.include({ url: `${receiver().url}/c`, description: 'd' });
      expect(patched.body.events).to.deep.equal(['document.updated', 'document.deleted']);
      expect(patched.body).to.not.have.property('secret');
      const empty = await ctx.server.request('PATCH', `${base()}/${created.id}`, {
        key: ctx.tenant.key,
        body: {},
      });
      expect(empty.status).to.equal(400);
      const badStatus = await ctx.server.request('PATCH', `${base()}/${created.id}`, {
        key: ctx.tenant.key,
        body: { status: 'paused' },
      });
      expect(badStatus.status).to.equal(400);
      const deleted = await ctx.server.request('DELETE', `${base()}/${created.id}`, { key: ctx.tenant.key });
      expect(deleted.status).to.equal(204);
      for (const [method, path] of [
        ['GET', `${base()}/${created.id}`],
        ['PATCH', `${base()}/${created.id}`],
        ['DELETE', `${base()}/${created.id}`],
        ['POST', `${base()}/${created.id}/test`],
      ] as const) {
        const res = await ctx.server.request(method, path, {
          key: ctx.tenant.key,
          ...(method === 'PATCH' ? { body: { description: 'x' } } : {}),
        });
        expect(res.status, `${method} ${path}`).to.equal(404);
        expect(res.body.error.code).to.equal('not_found');
      }
    });

    it('keeps webhooks to their collection: another collection does not see or reach them', async () => {
      const { body: created } = await register({ url: `${receiver().url}/d`, events: ['document.created'] });
      const other = await ctx.server.request(
        'GET',
        `/${ctx.tenant.project}/invoices/_webhooks/${created.id}`,
        {
          key: ctx.tenant.key,
        },
      );
      expect(other.status).to.equal(404);
      const list = await ctx.server.request('GET', `/${ctx.tenant.project}/invoices/_webhooks`, {
        key: ctx.tenant.key,
      });
      expect(list.body.webhooks).to.deep.equal([]);
    });

    it('sends a signed webhook.test event synchronously and answers with the delivery record', async () => {
      const { body: created } = await register({
        url: `${receiver().url}/test-hook`,
        events: ['document.created'],
      });
      const res = await ctx.server.request('POST', `${base()}/${created.id}/test`, { key: ctx.tenant.key });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({ event: 'webhook.test', status: 'succeeded', documentId: null });
      expect(res.body.id).to.match(/^dlv_/);
      expect(res.body.attempts).to.have.length(1);
      expect(res.body.attempts[0]).to.include({ number: 1, statusCode: 200, error: null, nextRetryAt: null });

      const [got] = receiver().requests.filter((r) => r.path === '/test-hook');
      expect(got).to.not.equal(undefined);
      expect(got!.method).to.equal('POST');
      expect(got!.headers['content-type']).to.equal('application/json');
      expect(got!.headers['user-agent']).to.match(/^Folio-Webhooks\/\d+\.\d+\.\d+/);
      expect(got!.headers['x-service-event']).to.equal('webhook.test');
      expect(got!.headers['x-service-delivery-id']).to.equal(res.body.id);
      expect(got!.body).to.deep.equal({
        event: 'webhook.test',
        project: ctx.tenant.project,
        collection: 'orders',
        documentId: null,
        document: {},
        timestamp: got!.headers['x-service-timestamp'],
      });
      expect(verifySignature(got!.rawBody, got!.headers['x-service-signature'], created.secret)).to.equal(
        true,
      );
      expect(
        verifySignature(`${got!.rawBody} `, got!.headers['x-service-signature'], created.secret),
      ).to.equal(false);

      const one = await ctx.server.request('GET', `${base()}/${created.id}`, { key: ctx.tenant.key });
      expect(one.body.deliveries.map((d: { id: string }) => d.id)).to.deep.equal([res.body.id]);
    });

    it('records a failed test delivery with the status code, and never a redirect followed', async () => {
      receiver().respond = (r) => (r.path === '/moved' ? 302 : r.path === '/broken' ? 500 : 200);
      try {
        const { body: moved } = await register({
          url: `${receiver().url}/moved`,
          events: ['document.created'],
        });
        const res = await ctx.server.request('POST', `${base()}/${moved.id}/test`, { key: ctx.tenant.key });
        expect(res.body.status).to.equal('failed');
        expect(res.body.attempts[0]).to.include({ statusCode: 302, error: 'HTTP 302' });
        const { body: broken } = await register({
          url: `${receiver().url}/broken`,
          events: ['document.created'],
        });
        const failed = await ctx.server.request('POST', `${base()}/${broken.id}/test`, {
          key: ctx.tenant.key,
        });
        expect(failed.body.attempts[0]).to.include({ statusCode: 500 });
        // A test delivery never counts towards disabling.
        const after = await ctx.server.request('GET', `${base()}/${broken.id}`, { key: ctx.tenant.key });
        expect(after.body).to.include({ status: 'active', consecutiveFailures: 0 });
      } finally {
        receiver().respond = () => 200;
      }
    });

    it('rotates the secret: the new one signs, the old one no longer verifies', async () => {
      const { body: created } = await register({
        url: `${receiver().url}/rotate`,
        events: ['document.created'],
      });
      const rotated = await ctx.server.request('POST', `${base()}/${created.id}/rotate-secret`, {
        key: ctx.tenant.key,
      });
      expect(rotated.status).to.equal(200);
      expect(rotated.body.secret).to.match(/^whsec_/);
      expect(rotated.body.secret).to.not.equal(created.secret);
      await ctx.server.request('POST', `${base()}/${created.id}/test`, { key: ctx.tenant.key });
      const got = receiver()
        .requests.filter((r) => r.path === '/rotate')
        .at(-1)!;
      expect(verifySignature(got.rawBody, got.headers['x-service-signature'], rotated.body.secret)).to.equal(
        true,
      );
      expect(verifySignature(got.rawBody, got.headers['x-service-signature'], created.secret)).to.equal(
        false,
      );
    });

    it('lets read-only keys list and read webhooks, and nothing else', async () => {
      const { rawKey } = await ctx.tenant.newKey({ scope: 'read-only', name: 'ro' });
      expect((await ctx.server.request('GET', base(), { key: rawKey })).status).to.equal(200);
      const res = await ctx.server.request('POST', base(), {
        key: rawKey,
        body: { url: `${receiver().url}/ro`, events: ['document.created'] },
      });
      expect(res.status).to.equal(403);
      expect(res.body.error.code).to.equal('read_only_key');
    });
  },
  { config: LOCAL, plan: 'pro' },
);

forEachStore(
  'webhooks: plan limit',
  (ctx) => {
    it('allows the plan’s number of webhooks per collection and refuses one more with 403', async () => {
      const register = (collection: string) =>
        ctx.server.request('POST', `/${ctx.tenant.project}/${collection}/_webhooks`, {
          key: ctx.tenant.key,
          body: { url: 'http://127.0.0.1:9/x', events: ['document.created'] },
        });
      for (let i = 0; i < 2; i++) expect((await register('limited')).status).to.equal(201);
      const over = await register('limited');
      expect(over.status).to.equal(403);
      expect(over.body.error).to.deep.include({ code: 'plan_limit_exceeded' });
      expect(over.body.error.details).to.deep.equal({
        limit: 'webhooks per collection',
        max: 2,
        plan: 'free',
      });
      expect((await register('elsewhere')).status).to.equal(201);
    });

    it('holds under 20 concurrent registrations: exactly the plan’s number are created', async () => {
      const register = () =>
        ctx.server.request('POST', `/${ctx.tenant.project}/raced/_webhooks`, {
          key: ctx.tenant.key,
          // They interleave wherever the store does I/O (MongoDB); the store's bounded create is
          // raced directly in its conformance test.
          body: { url: 'http://127.0.0.1:9/x', events: ['document.created'] },
        });
      const statuses = (await Promise.all(Array.from({ length: 20 }, register))).map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).to.have.length(2);
      expect(statuses.filter((s) => s === 403)).to.have.length(18);
      const listed = await ctx.server.request('GET', `/${ctx.tenant.project}/raced/_webhooks`, {
        key: ctx.tenant.key,
      });
      expect(listed.body.webhooks).to.have.length(2);
    });
  },
  { config: { ...LOCAL, plans: { free: { maxWebhooks: 2 } } } },
);

/** A 400 that names the `url` field. */
function expectUrlRefused(res: ApiResponse, url: string): void {
  expect(res.status, url).to.equal(400);
  expect(res.body.error.details).to.deep.equal({ field: 'url' });
}

forEachStore('webhooks: refused targets (SSRF)', (ctx) => {
  const register = (url: string) =>
    ctx.server.request('POST', `/${ctx.tenant.project}/orders/_webhooks`, {
      key: ctx.tenant.key,
      body: { url, events: ['document.created'] },
    });

  it('refuses literal private, loopback, link-local and metadata addresses', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://10.1.2.3/hook',
      'http://172.16.0.1/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://100.64.0.1/hook',
      'http://0.0.0.0/hook',
      'http://[::1]/hook',
      'http://[fe80::1]/hook',
      'http://[fd00:ec2::254]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://2130706433/hook',
    ]) {
      const res = await register(url);
      expectUrlRefused(res, url);
    }
  });

  const EMBEDDED_IPV4 = [
    'http://[::ffff:0:7f00:1]/hook',
    'http://[::127.0.0.1]/hook',
    'http://[64:ff9b:1::7f00:1]/hook',
    'http://[2002:7f00:1::1]/hook',
    'http://[2002:a9fe:a9fe::1]/hook',
    'http://[64:ff9b:1::a9fe:a9fe]/hook',
    'http://[::a9fe:a9fe]/hook',
  ];

  it('refuses IPv6 forms that embed a loopback or link-local IPv4, at registration and at update', async () => {
    for (const url of EMBEDDED_IPV4) {
      const res = await register(url);
      expectUrlRefused(res, url);
    }
    const created = await register('http://[2606:4700::1111]/hook');
    expect(created.status).to.equal(201);
    const path = `/${ctx.tenant.project}/orders/_webhooks/${created.body.id}`;
    for (const url of EMBEDDED_IPV4) {
      const res = await ctx.server.request('PATCH', path, { key: ctx.tenant.key, body: { url } });
      expectUrlRefused(res, url);
    }
    const after = await ctx.server.request('GET', path, { key: ctx.tenant.key });
    expect(after.body.url).to.equal('http://[2606:4700::1111]/hook');
  });

  it('refuses Teredo, site-local and reserved ::/8 forms (not globally reachable) with 400 naming the reason', async () => {
    for (const url of [
      'http://[2001::80ff:fffe]:4937/',
      'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:4937/',
      'http://[2001::5601:5601]/',
      'http://[fec0::1]:4937/',
      'http://[::ffff:0:0:7f00:1]:4937/',
    ]) {
      const res = await register(url);
      expectUrlRefused(res, url);
      expect(res.body.error.message, url).to.match(/not globally reachable/);
    }
  });

  it('refuses a host name that resolves to a loopback address', async () => {
    const res = await register('http://localhost:8080/hook');
    expect(res.status).to.equal(400);
    expect(res.body.error.message).to.match(
      /localhost resolves to a private, loopback or link-local address/,
    );
  });
});
