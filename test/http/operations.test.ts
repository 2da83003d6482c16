/**
 * Operator routes over HTTP: `/readyz` follows the server's phase and its background parts;
 * `/metrics` answers only when enabled and only to the metrics token, and its labels never
 * carry a tenant's path, key or ids.
 */
import { connect } from 'node:net';
import { expect } from 'chai';
import { loadConfig } from '../../src/config/load.js';
import { startReceiver } from '../support/receiver.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { StreamClient } from '../support/sse.js';
import { eventually } from '../support/timeout.js';

const TOKEN = 'metrics-token-0123456789';

/** One sample's value from the exposition text, or 0 when the series is absent. */
function sample(text: string, name: string, labels: string): number {
  for (const line of text.split('\n')) {
    const bare = labels === '' && line.startsWith(`${name} `);
    if (bare || (line.startsWith(`${name}{`) && line.includes(labels)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('readiness: GET /readyz', () => {
  it('answers 200 while running, 503 once the webhook dispatcher stopped, distinct from /healthz', async () => {
    const server = await startTestServer();
    try {
      const ready = await server.request('GET', '/readyz');
      expect(ready.status).to.equal(200);
      expect(ready.body).to.deep.equal({
        status: 'ready',
        phase: 'running',
        checks: { store: true, jobs: true, webhookDispatcher: true },
      });
      await server.running.dispatcher.stop();
      const down = await server.request('GET', '/readyz');
      expect(down.status).to.equal(503);
      expect(down.body.checks).to.deep.equal({ store: true, jobs: true, webhookDispatcher: false });
      expect((await server.request('GET', '/healthz')).status).to.equal(200);
    } finally {
      await server.close();
    }
  });

  it('answers 503 to a request that arrives during shutdown', async () => {
    const server = await startTestServer();
    const { port } = server.running;
    // A request still being sent keeps its connection open through close(); a second request
    // pipelined behind it is answered during shutdown.
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString();
    });
    const body = '{"email":"x@example.test","password":"wrong password"}';
    socket.write(
      `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
    );
    await new Promise((r) => setTimeout(r, 100));
    const closing = server.close();
    expect(server.running.readiness.phase).to.equal('stopping');
    socket.write(`${body.slice(5)}GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await eventually(async () => {
      expect(received).to.match(/HTTP\/1\.1 503/);
    });
    expect(received).to.include('"phase":"stopping"');
    socket.destroy();
    await closing;
  });
});

describe('metrics: GET /metrics', () => {
  it('is not served unless enabled', async () => {
    const server = await startTestServer();
    try {
      const res = await server.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
      expect(res.status).to.equal(404);
    } finally {
      await server.close();
    }
  });

  it('cannot be enabled without a token of at least 16 characters', () => {
    const base = { port: 0, dataDir: '/tmp/x' };
    expect(() => loadConfig({}, [base, { metrics: { enabled: true, token: '' } }])).to.throw(
      /FOLIO_METRICS_TOKEN/,
    );
    expect(() => loadConfig({}, [base, { metrics: { enabled: true, token: 'a'.repeat(15) } }])).to.throw(
      /FOLIO_METRICS_TOKEN/,
    );
    expect(
      loadConfig({}, [base, { metrics: { enabled: true, token: 'a'.repeat(16) } }]).metrics.enabled,
    ).to.equal(true);
  });

  describe('when enabled', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({
        config: {
          metrics: { enabled: true, token: TOKEN },
          webhooks: { allowPrivateTargets: true, pollMs: 40, backoffBaseMs: 20 },
        },
      });
    });
    after(() => server.close());
    const scrape = () => server.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });

    it('answers 401 without the token, with a wrong one, and with a tenant API key', async () => {
      const tenant = await server.tenant();
      const attempts: Array<Record<string, string>> = [
        {},
        { Authorization: `Bearer ${TOKEN}x` },
        { Authorization: `Bearer ${tenant.key}` },
      ];
      for (const headers of attempts) {
        const res = await server.request('GET', '/metrics', { headers });
        expect(res.status).to.equal(401);
        expect(res.body.error.code).to.equal('unauthorized');
        expect(res.headers.get('www-authenticate')).to.equal('Bearer');
      }
    });

    it('counts requests by route template and status, times store operations, never shows tenant ids', async () => {
      const tenant = await server.tenant({ project: 'secretproject' });
      const byId = 'method="GET",route="/:ns/:collection/:id"';
      const before = (await scrape()).text;
      const created = await server.request('POST', `/${tenant.project}/hiddencollection`, {
        key: tenant.key,
        body: { n: 1 },
      });
      const id: string = created.body._id;
      for (let i = 0; i < 3; i++) {
        expect(
          (await server.request('GET', `/${tenant.project}/hiddencollection/${id}`, { key: tenant.key }))
            .status,
        ).to.equal(200);
      }
      await server.request('GET', `/${tenant.project}/hiddencollection/doc_01ARZ3NDEKTSV4RRFFQ69G5FAV`, {
        key: tenant.key,
      });
      const res = await scrape();
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.match(/^text\/plain/);
      const text = res.text;
      // Exactly the requests made: one observation each, counted once.
      const delta = (name: string, labels: string) =>
        sample(text, name, labels) - sample(before, name, labels);
      expect(delta('folio_http_requests_total', `${byId},status="200"`)).to.equal(3);
      expect(delta('folio_http_requests_total', `${byId},status="404"`)).to.equal(1);
      // The counter is read from the histogram's series: the two agree, +Inf bucket included.
      for (const status of ['200', '404']) {
        const labels = `${byId},status="${status}"`;
        const count = sample(text, 'folio_http_request_duration_seconds_count', labels);
        expect(sample(text, 'folio_http_requests_total', labels)).to.equal(count);
        expect(sample(text, 'folio_http_request_duration_seconds_bucket', `le="+Inf",${labels}`)).to.equal(
          count,
        );
      }
      expect(
        sample(text, 'folio_http_request_duration_seconds_count', 'route="/:ns/:collection",status="201"'),
      ).to.be.at.least(1);
      expect(
        sample(
          text,
          'folio_store_operation_duration_seconds_count',
          'operation="documents.get",outcome="ok"',
        ),
      ).to.be.at.least(3);
      expect(
        sample(text, 'folio_store_operation_duration_seconds_count', 'operation="documents.commit"'),
      ).to.be.at.least(1);
      expect(text).to.match(/^nodejs_eventloop_lag_seconds /m);
      expect(text).to.match(/^process_resident_memory_bytes /m);
      for (const secret of [
        tenant.project,
        'hiddencollection',
        id,
        tenant.key,
        tenant.session,
        tenant.email,
      ]) {
        expect(text).not.to.include(secret);
      }
    });

    it('shows open change streams', async () => {
      const tenant = await server.tenant({ plan: 'pro' });
      const stream = new StreamClient(`${server.url}/${tenant.project}/watched/_stream`, tenant.key);
      try {
        await stream.opened;
        const text = (await scrape()).text;
        expect(sample(text, 'folio_sse_streams_open', '')).to.equal(1);
      } finally {
        stream.close();
      }
      await eventually(async () => {
        expect((await scrape()).text).to.match(/^folio_sse_streams_open 0$/m);
      });
    });

    it('shows the embedded store’s background WAL checkpoints', async () => {
      const tenant = await server.tenant();
      const before = sample((await scrape()).text, 'folio_sqlite_wal_checkpoints_total', '');
      const created = await server.request('POST', `/${tenant.project}/checkpointed`, {
        key: tenant.key,
        body: { a: 1 },
      });
      expect(created.status).to.equal(201);
      await eventually(async () => {
        const text = (await scrape()).text;
        expect(sample(text, 'folio_sqlite_wal_checkpoints_total', '')).to.be.above(before);
        expect(sample(text, 'folio_sqlite_wal_frames', '')).to.be.above(0);
        expect(text).to.match(/^folio_sqlite_wal_checkpoint_failures_total 0$/m);
        expect(text).to.match(/^folio_sqlite_wal_checkpoint_seconds_total \d/m);
      });
    });

    it('counts commit groups and syncs: a write syncs once, and so does a whole bulk request', async () => {
      const tenant = await server.tenant();
      const counts = async () => {
        const text = (await scrape()).text;
        return {
          groups: sample(text, 'folio_sqlite_commit_groups_total', ''),
          syncs: sample(text, 'folio_sqlite_commit_syncs_total', ''),
        };
      };
      const start = await counts();
      const one = await server.request('POST', `/${tenant.project}/synced`, {
        key: tenant.key,
        body: { a: 1 },
      });
      expect(one.status).to.equal(201);
      const afterOne = await counts();
      expect({ groups: afterOne.groups - start.groups, syncs: afterOne.syncs - start.syncs }).to.deep.equal({
        groups: 1,
        syncs: 1,
      });
      const operations = [
        ...Array.from({ length: 8 }, (_, i) => ({ method: 'POST', id: `b${i}`, body: { i } })),
        { method: 'PATCH', id: 'b0', body: { patched: true } },
        { method: 'DELETE', id: 'b1' },
      ];
      const bulk = await server.request('POST', `/${tenant.project}/synced/_bulk`, {
        key: tenant.key,
        body: { operations },
      });
      expect(bulk.body.summary, JSON.stringify(bulk.body)).to.deep.equal({
        total: 10,
        succeeded: 10,
        failed: 0,
      });
      const afterBulk = await counts();
      // The creates share a group; the PATCH and the DELETE wait for their document's create,
      // then share the next, which the last operation's durable commit syncs: one sync.
      expect({
        groups: afterBulk.groups - afterOne.groups,
        syncs: afterBulk.syncs - afterOne.syncs,
      }).to.deep.equal({ groups: 2, syncs: 1 });
    });

    it('counts webhook delivery outcomes and shows the delivery job queue', async () => {
      const tenant = await server.tenant();
      const receiver = await startReceiver();
      receiver.respond = (request) => (request.body.document.fail ? 500 : 200);
      try {
        const before = (await scrape()).text;
        const hook = await server.request('POST', `/${tenant.project}/orders/_webhooks`, {
          key: tenant.key,
          body: { url: receiver.url, events: ['document.created'] },
        });
        expect(hook.status).to.equal(201);
        await server.request('POST', `/${tenant.project}/orders`, { key: tenant.key, body: { fail: false } });
        await server.request('POST', `/${tenant.project}/orders`, { key: tenant.key, body: { fail: true } });
        // Free plan: 2 retries, so the failing delivery makes 3 attempts: 2 retrying, 1 failed.
        await eventually(async () => {
          const text = (await scrape()).text;
          const delta = (outcome: string) =>
            sample(text, 'folio_webhook_delivery_attempts_total', `outcome="${outcome}"`) -
            sample(before, 'folio_webhook_delivery_attempts_total', `outcome="${outcome}"`);
          expect([delta('succeeded'), delta('retrying'), delta('failed')]).to.deep.equal([1, 2, 1]);
          expect(text).to.match(/^folio_webhook_jobs\{state="completed"\} [1-9]/m);
        });
      } finally {
        await receiver.close();
      }
    });
  });

  it('counts rate-limit rejections', async () => {
    const server = await startTestServer({
      realRateLimits: true,
      config: { metrics: { enabled: true, token: TOKEN } },
    });
    try {
      const tenant = await server.tenant();
      const statuses = await Promise.all(
        Array.from({ length: 15 }, () =>
          server.request('GET', `/${tenant.project}/things`, { key: tenant.key }),
        ),
      );
      const rejected = statuses.filter((r) => r.status === 429).length;
      expect(rejected).to.be.at.least(5);
      const text = (
        await server.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } })
      ).text;
      expect(sample(text, 'folio_rate_limit_rejections_total', 'reason="rate_limited"')).to.equal(rejected);
    } finally {
      await server.close();
    }
  });
});
