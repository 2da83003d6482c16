/**
 * A document's webhook body is stored once per event, also for retries: with ten webhooks on a
 * collection and the receiver down, the retry jobs name one kept body rather than carrying ten
 * copies, and when the receiver comes back every webhook gets the exact bytes, signed with its
 * own secret, under its stable delivery id. Embedded store (the rows are counted in SQLite);
 * the MongoDB form's update is unit-tested in mongodb.webhooks.unit.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { BODY_GRACE_MS } from '../../src/jobs/jobRunner.js';
import { type Receiver, startReceiver, verifySignature } from '../support/receiver.js';
import { startTestServer, type Tenant, type TestServer } from '../support/server.js';
import { eventually } from '../support/timeout.js';

const WEBHOOKS = 10;
const DOCUMENT_BYTES = 100 * 1024;

describe('webhooks: one stored body per event, also for retries [embedded]', function () {
  this.timeout(60_000);
  let dataDir: string;
  let server: TestServer;
  let tenant: Tenant;
  let receiver: Receiver;
  let db: Database.Database;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-bodies-'));
    receiver = await startReceiver();
    server = await startTestServer({
      dataDir,
      // The first retry comes 2-3 s after the first attempt: time to count what is stored.
      config: { webhooks: { allowPrivateTargets: true, backoffBaseMs: 2_500, pollMs: 40, timeoutMs: 2000 } },
    });
    tenant = await server.tenant({ plan: 'pro' });
    db = new Database(join(dataDir, 'folio.db'), { readonly: true, fileMustExist: true });
  });
  after(async () => {
    db?.close();
    await server?.close();
    await receiver?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('keeps a 100 KB body once for ten webhooks and delivers it exactly to each when the receiver returns', async () => {
    const hooks: { id: string; secret: string }[] = [];
    for (let i = 0; i < WEBHOOKS; i++) {
      const res = await server.request('POST', `/${tenant.project}/big/_webhooks`, {
        key: tenant.key,
        body: { url: `${receiver.url}/h${i}`, events: ['document.created'] },
      });
      expect(res.status, res.text).to.equal(201);
      hooks.push(res.body);
    }
    let down = true;
    receiver.respond = () => (down ? 503 : 200);

    const text = 'x'.repeat(DOCUMENT_BYTES);
    const created = await server.request('POST', `/${tenant.project}/big`, {
      key: tenant.key,
      body: { text },
    });
    expect(created.status, created.text).to.equal(201);

    // Every first attempt failed and was handed over for a retry.
    const firsts = await receiver.waitFor(WEBHOOKS, (r) => r.status === 503, 15_000);
    const jobs = await eventually(async () => {
      const rows = db
        .prepare("SELECT data FROM agenda_jobs WHERE name = 'webhook-delivery' AND next_run_at IS NOT NULL")
        .all() as { data: string }[];
      if (rows.length < WEBHOOKS) throw new Error(`${rows.length} retry jobs so far`);
      return rows.map((row) => JSON.parse(row.data) as Record<string, unknown>);
    });
    expect(jobs).to.have.length(WEBHOOKS);
    expect(new Set(jobs.map((job) => job.bodyKey)).size).to.equal(1);
    for (const job of jobs) expect(job).to.not.have.property('body');
    const jobBytes = (
      db.prepare("SELECT sum(length(data)) AS n FROM agenda_jobs WHERE name = 'webhook-delivery'").get() as {
        n: number;
      }
    ).n;
    expect(jobBytes).to.be.below(WEBHOOKS * 1024);

    const stored = db.prepare('SELECT key, length(body) AS bytes FROM webhook_bodies').all() as {
      key: string;
      bytes: number;
    }[];
    expect(stored).to.have.length(1);
    expect(stored[0]!.key).to.equal(jobs[0]!.bodyKey);
    const firstBody = firsts[0]!.rawBody;
    expect(stored[0]!.bytes).to.equal(Buffer.byteLength(firstBody));
    expect(stored[0]!.bytes)
      .to.be.above(DOCUMENT_BYTES)
      .and.below(DOCUMENT_BYTES + 1024);

    // Past its time but named by unfinished jobs: kept.
    const bodies = server.running.services.store.deliveryBodies;
    const late = Date.now() + BODY_GRACE_MS + 60_000;
    expect(await bodies.removeExpired(late)).to.equal(0);

    down = false;
    const retried = await receiver.waitFor(WEBHOOKS, (r) => r.status === 200, 20_000);
    for (let i = 0; i < WEBHOOKS; i++) {
      const path = `/h${i}`;
      const first = firsts.find((r) => r.path === path)!;
      const ok = retried.find((r) => r.path === path)!;
      expect(ok.rawBody, path).to.equal(firstBody);
      expect(ok.body.document.text).to.equal(text);
      expect(ok.headers['x-service-delivery-id']).to.equal(first.headers['x-service-delivery-id']);
      expect(verifySignature(ok.rawBody, ok.headers['x-service-signature'], hooks[i]!.secret), path).to.equal(
        true,
      );
    }
    // Still one body: a second hand-over moves its time, never stores it again.
    expect((db.prepare('SELECT count(*) AS n FROM webhook_bodies').get() as { n: number }).n).to.equal(1);
    // Every job finished: once past its time, the body goes.
    await eventually(async () => {
      expect(await bodies.removeExpired(late)).to.equal(1);
    });
    expect((db.prepare('SELECT count(*) AS n FROM webhook_bodies').get() as { n: number }).n).to.equal(0);
  });
});
